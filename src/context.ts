/**
 * What a handler gets besides its input. Handlers know nothing about HTTP: no request, no
 * response, only the caller, the request id for logs, and the services.
 */
import type { Config } from './config.ts';
import type { Principal } from './auth/principal.ts';
import type { Database } from './db/connection.ts';
import type { Logger } from './logger.ts';
import type { Memberships, Tenant } from './auth/access.ts';
import type { Authenticator } from './auth/authenticate.ts';
import type { Mailer } from './email/mailer.ts';
import type { RateLimiter } from './auth/rate-limit.ts';
import type { PlanLookup } from './billing/plans.ts';
import type { StorageDriver } from './storage/driver.ts';
import type { AiClient } from './ai-service/client.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { ProcedureInput, ProcedureName, ProcedureOutput, procedures } from '../generated/procedures.ts';
import type { ResourceName, ResourceRow } from './resources.ts';

/** Long-lived services shared by every request; built once by the app factory. */
export interface Services {
  config: Config;
  db: Database;
  logger: Logger;
  memberships: Memberships;
  /** The configured email provider, or null when none is (features that send mail answer 412). */
  mailer: Mailer | null;
  /**
   * Per-route limiters: in PostgreSQL on a database server, so every API instance counts against
   * one budget; in process memory on the embedded database (auth/shared-rate-limit.ts). Address
   * keys are counted by `addressKey` (auth/rate-limit.ts): an IPv6 client by its /64.
   */
  limiters: {
    /** contact.send, per client address. */
    contact: RateLimiter;
    /**
     * Sign-in attempts per (email, client address), keyed by `signInKey`: guessing one account's
     * password is slowed, yet guesses from elsewhere never lock its owner out.
     */
    signInEmail: RateLimiter;
    /** Sign-in attempts per client address, whatever the email: one address cannot try many accounts fast. */
    signInAddress: RateLimiter;
    /** documents.search, per user: 30 a minute. */
    search: RateLimiter;
  };
  /** Where document bytes live: local files or an S3 bucket (STORAGE_DRIVER). */
  storage: StorageDriver;
  /** HMAC key of signed URLs and cursors (see secret.ts). */
  secret: string;
  /** The AI service (embeddings, extraction) at AI_URL. */
  ai: AiClient;
  /** Where jobs are queued (pg-boss); the worker may run in this process or elsewhere. */
  queue: JobQueue;
  /** Plan limits; null limits (billing not configured) mean nothing is enforced. */
  plans: PlanLookup;
  /** Resolves the caller from request headers; null when there is no valid session. */
  authenticate: Authenticator;
  /** The clock: sessions, tokens and limits read time here, so tests can move it. */
  now(): Date;
  /** When this app was built, i.e. when the API process started serving (admin.system.status). */
  startedAt: Date;
  /**
   * jobs.stream timing (src/jobs/stream.ts, event-hub.ts), shortened by tests. Defaults: a comment
   * every 15 s, authorization re-checked every 30 s, a 15-minute lifetime, the event log polled every 1 s.
   */
  streamTiming?: { heartbeatMs?: number; recheckMs?: number; lifetimeMs?: number; pollMs?: number };
}

export interface Context<Row = undefined> {
  requestId: string;
  log: Logger;
  /** The client's address (x-forwarded-for only behind a trusted proxy). */
  ip: string;
  principal: Principal | null;
  services: Services;
  /**
   * The organization the declared access was checked in, with the caller's role there; null for
   * public, session and platform-admin operations (and organization-optional ones called without).
   */
  tenant: Tenant | null;
  /** A by-id operation's row (`x-access` tenant: row), loaded and authorized by the binding layer. */
  row: Row;
}

/** The row type an operation's declared access hands its handler. */
export type RowOf<A> = A extends { resource: infer R } ? (R extends ResourceName ? ResourceRow<R> : never) : undefined;

export type Handler<N extends ProcedureName> = (
  input: ProcedureInput<N>,
  ctx: Context<RowOf<(typeof procedures)[N]['access']>>,
) => Promise<ProcedureOutput<N>> | ProcedureOutput<N>;

export type Handlers = { [N in ProcedureName]?: Handler<N> };

export interface EventSink {
  /** `event:`, optional `id:` and one `data:` line of JSON (WHATWG HTML, server-sent events). */
  send(event: string, data: unknown, id?: string): void;
  comment(text: string): void;
  /** `retry:`, the reconnection delay in milliseconds the client should use from now on. */
  retry(ms: number): void;
  /**
   * Runs the call's authorization again, as the binding layer did when the stream opened: the
   * session still valid and its user not banned, and the access the contract declares still held.
   * Long-lived streams call it periodically; false means the caller lost access.
   */
  authorized(): Promise<boolean>;
  close(): void;
  /** Aborted when the client goes away or the stream is closed. */
  readonly signal: AbortSignal;
  /** The Last-Event-Id the client resumes from, if any. */
  readonly lastEventId: string | undefined;
}

export type StreamHandler = (input: Record<string, unknown>, ctx: Context<any>, sink: EventSink) => Promise<void>;
export type StreamHandlers = Record<string, StreamHandler>;

/**
 * What a handler gets besides its input. Handlers know nothing about HTTP: no request, no
 * response, only the caller, the request id for logs, and the services.
 */
import type { RequestGate } from './db/request-gate.ts';
import type { Config } from './config.ts';
import type { Principal } from './auth/principal.ts';
import type { Database } from './db/connection.ts';
import type { Logger } from './logger.ts';
import type { Memberships, Tenant } from './auth/access.ts';
import type { Authenticator } from './auth/authenticate.ts';
import type { Outbox } from './email/outbox.ts';
import type { RateLimiter } from './auth/rate-limit.ts';
import type { PlanLookup } from './credits/plans.ts';
import type { StorageDriver } from './storage/driver.ts';
import type { AiClient } from './ai-service/client.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { JobMetrics } from './telemetry/job-metrics.ts';
import type { JobLifecycle } from './jobs/lifecycle.ts';
import type { JobStreams } from './jobs/job-streams.ts';
import type { StripeClient } from './billing/stripe-client.ts';
import type { ProcedureInput, ProcedureName, ProcedureOutput, procedures } from '../generated/procedures.ts';
import type { AuthRouteInput, AuthRouteName, AuthRouteOutput, authRoutes } from '../generated/auth-routes.ts';
import { ApiError } from './contract/errors.ts';
import type { Document } from './documents/store.ts';
import type { FeatureFlag } from './flags/store.ts';
import type { JobRow } from './jobs/store.ts';
import type { InvitationRow } from './organizations/invitations-store.ts';
import type { OrganizationRow } from './organizations/store.ts';
import type { TeamRow } from './organizations/teams-store.ts';
import type { Workspace } from './workspaces/store.ts';
import type { ResourceRegistry } from './db/resource.ts';

/** Long-lived services shared by every request; built once by the app factory. */
export interface Services {
  config: Config;
  db: Database;
  /** The API's requests in flight, which the worker's jobs and vacuum give way to on the embedded database (db/request-gate.ts). */
  requests: RequestGate;
  logger: Logger;
  memberships: Memberships;
  /** The loaders of by-id operations' rows (composition/resources.ts), read by the binding layer. */
  resources: ResourceRegistry;
  /**
   * The configured email provider behind the recipients' budget (email/outbox.ts), or null when
   * none is configured (features that send mail answer 412).
   */
  mailer: Outbox | null;
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
  /** Every change of a job's state (jobs/lifecycle.ts); wakes workers and streams once committed. */
  jobs: JobLifecycle;
  /** The jobs' queue-wait and run-time histograms: the worker records them, the app's /metrics serves them. */
  jobMetrics: JobMetrics;
  /** What the open jobs.stream connections share: the event reader, the per-user cap, the revocation watcher. */
  streams: JobStreams;
  /** The Stripe client, made on first use (billing routes answer 412 before asking when billing is off). */
  stripe: StripeClient;
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

/**
 * The row each resource's loader answers (db/resource.ts), by the name `x-access` gives it. The
 * loaders themselves are registered at the composition root (composition/resources.ts), which
 * checks them against this map.
 */
export interface ResourceRows {
  workspace: Workspace;
  document: Document;
  team: TeamRow;
  invitation: InvitationRow;
  job: JobRow;
  organization: OrganizationRow;
  flag: FeatureFlag;
}
export type ResourceName = keyof ResourceRows;

/** The row type an operation's declared access hands its handler. */
export type RowOf<A> = A extends { resource: infer R } ? (R extends ResourceName ? ResourceRows[R] : never) : undefined;

/**
 * The one shape of a handler, for procedures and identity routes alike: its input and a context
 * in, its answer out, nothing about HTTP. `Extra` is what a kind of operation adds to the context
 * (identity routes: the user agent, cookies, the raw body).
 */
export type HandlerOf<Input, Access, Answer, Extra = unknown> = (input: Input, ctx: Context<RowOf<Access>> & Extra) => Promise<Answer> | Answer;

/** A procedure's handler (openapi/openapi.yaml): answers the contract's output. */
export type Handler<N extends ProcedureName> = HandlerOf<ProcedureInput<N>, (typeof procedures)[N]['access'], ProcedureOutput<N>>;
/** A group's handlers (each group module `satisfies` it): any of the procedures. */
export type Handlers = { [N in ProcedureName]?: Handler<N> };
/** The procedures that answer once (the streaming ones are StreamHandlers). */
export type AnsweringProcedureName = { [N in ProcedureName]: (typeof procedures)[N]['produces'] extends 'event-stream' ? never : N }[ProcedureName];
/** The composition root's table: every answering procedure has its handler, or the build fails. */
export type CompleteHandlers = { [N in AnsweringProcedureName]: Handler<N> };

/**
 * An identity route's handler (openapi/auth.yaml). Like a procedure it knows nothing about
 * Express; unlike one it may hand out or clear a session, set a short-lived cookie (OAuth state)
 * or redirect, which the identity router turns into headers.
 */
export type AuthHandler<N extends AuthRouteName> = HandlerOf<AuthRouteInput<N>, (typeof authRoutes)[N]['access'], AuthAnswer<AuthRouteOutput<N>>, AuthExtra>;
export type AuthHandlers = { [N in AuthRouteName]?: AuthHandler<N> };
/** The composition root's table of identity routes: every one has its handler, or the build fails. */
export type CompleteAuthHandlers = { [N in AuthRouteName]: AuthHandler<N> };

/** What identity routes get in their context besides a procedure's. */
export interface AuthExtra {
  userAgent: string | null;
  /** A request cookie by name (OAuth state and verifier cookies). */
  cookie(name: string): string | undefined;
  /**
   * The request body exactly as it arrived (UTF-8 text), for what signs the bytes rather than
   * the parsed JSON (the Stripe webhook); undefined without a body.
   */
  rawBody(): string | undefined;
  /** A request header the contract declares (headers are not part of the input), e.g. stripe-signature. */
  header(name: string): string | undefined;
}

export type AuthContext<Row = undefined> = Context<Row> & AuthExtra;

export interface AuthAnswer<T> {
  body?: T;
  /** Answer 302 to this URL instead of a body. */
  redirect?: string;
  /** A session created now: sent as set-auth-token and as the session cookie. */
  session?: { token: string; expiresAt: Date };
  /** Remove the session cookie (sign-out, revocation of the current session). */
  clearSession?: boolean;
  /** Other cookies to set; maxAgeSeconds 0 removes one. */
  cookies?: { name: string; value: string; maxAgeSeconds: number; path?: string }[];
}

/** The caller of an operation that needs a session: the binding layer already answered 401 without one, so this narrows the type. */
export function signedIn(ctx: Context<unknown>): Principal {
  if (!ctx.principal) throw new ApiError('UNAUTHORIZED');
  return ctx.principal;
}

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

export type StreamHandler = (input: Record<string, unknown>, ctx: Context<unknown>, sink: EventSink) => Promise<void>;
export type StreamHandlers = Record<string, StreamHandler>;

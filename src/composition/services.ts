/**
 * The services of one process, built once: what every handler, the binding layer and the worker
 * get (context.ts, Services). Tests replace parts through `overrides`; the defaults are the real ones.
 */
import { createRequestGate, OPEN_GATE } from '../db/request-gate.ts';
import type { Config } from '../config.ts';
import type { Services } from '../context.ts';
import type { Database } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import { sessionAuthenticator } from '../auth/authenticate.ts';
import { databaseMemberships } from '../auth/memberships.ts';
import { byAddress } from '../auth/rate-limit.ts';
import type { LimiterFactory } from '../auth/rate-limit.ts';
import { rateLimiters } from '../auth/shared-rate-limit.ts';
import { createMailer } from '../email/providers.ts';
import type { Mailer } from '../email/mailer.ts';
import { createOutbox } from '../email/outbox.ts';
import { billedPlans, unbilled } from '../credits/plans.ts';
import { resolveSecret } from '../secret.ts';
import { createAiClient } from '../ai-service/client.ts';
import { openJobQueue, type QueueOptions } from '../jobs/queue.ts';
import { jobEventBus } from '../jobs/event-bus.ts';
import { jobLifecycle } from '../jobs/lifecycle.ts';
import { jobStreams } from '../jobs/job-streams.ts';
import { createStorageDriver } from '../storage/create-driver.ts';
import { createJobMetrics } from '../telemetry/job-metrics.ts';
import { stripeClient } from '../billing/stripe-client.ts';
import { resourceRegistry } from './resources.ts';

export type ServiceOverrides = Partial<Pick<Services, 'authenticate' | 'memberships' | 'now' | 'plans' | 'storage' | 'ai' | 'streamTiming'>> & {
  /** The email provider (null: none); every mail still goes through the recipients' budget. */
  mailer?: Mailer | null;
  /** Queue timing (tests shorten the retry backoff and the polling). */
  queue?: Pick<QueueOptions, 'retryDelaySeconds' | 'pollingSeconds'>;
};

export interface ServiceOptions {
  config: Config;
  db: Database;
  logger: Logger;
  /** Whether this process's queue takes deliveries (a worker runs here). */
  works: boolean;
  overrides?: ServiceOverrides | undefined;
}

export async function createServices(options: ServiceOptions): Promise<{ services: Services; limit: LimiterFactory }> {
  const { config, db, logger, overrides = {} } = options;
  const now = overrides.now ?? (() => new Date());
  const clock = () => now().getTime();
  const secret = resolveSecret(config);
  const storage = overrides.storage ?? (await createStorageDriver(config, secret));
  // In PostgreSQL on a database server (shared by every instance), in memory on the embedded one.
  const limit = rateLimiters({ db, now: clock, logger });
  // Starting behind the services (queue.ts, Starting): compose's `started` says when it has.
  const queue = openJobQueue({ db, settings: config.worker, logger, worker: options.works, ...overrides.queue });
  const events = jobEventBus();
  // Every mail counts against its recipient's budget, all kinds and senders together (email/outbox.ts).
  const recipients = limit('mail.recipient', { limit: config.mailBudget.perRecipient, windowMs: config.mailBudget.windowMinutes * 60_000 });
  const outbox = (mailer: Mailer | null) => (mailer ? createOutbox({ mailer, budget: recipients, operatorAddress: config.contactEmail }) : null);
  const services: Services = {
    config,
    db,
    // One connection: the worker's jobs wait for the API's requests (db/request-gate.ts).
    requests: db.kind === 'embedded' ? createRequestGate() : OPEN_GATE,
    logger,
    now,
    // Real time, not the service clock: uptime is about this process, whatever tests do to now().
    startedAt: new Date(),
    memberships: overrides.memberships ?? databaseMemberships(db.sql),
    resources: resourceRegistry,
    authenticate: overrides.authenticate ?? sessionAuthenticator(db.sql, now),
    mailer: outbox(overrides.mailer === undefined ? createMailer(config, logger) : overrides.mailer),
    limiters: {
      contact: byAddress(limit('contact', { limit: 5, windowMs: 10 * 60_000 })),
      // Keyed by signInKey (email and address): 5 tries at one account from one client per 15 minutes.
      signInEmail: limit('sign-in.email', { limit: 5, windowMs: 15 * 60_000 }),
      signInAddress: byAddress(limit('sign-in.address', { limit: config.authRateLimitPerMinute * 5, windowMs: 15 * 60_000 })),
      search: limit('search', { limit: 30, windowMs: 60_000 }),
    },
    // Plan limits apply only while billing is configured (decisions.md, Plans).
    plans: overrides.plans ?? (config.billing ? billedPlans(db.sql, now) : unbilled),
    stripe: stripeClient(config.billing),
    secret,
    storage,
    ...(overrides.streamTiming ? { streamTiming: overrides.streamTiming } : {}),
    ai: overrides.ai ?? createAiClient({ url: config.ai.url, apiKey: config.ai.apiKey, model: config.ai.openai.model }),
    queue,
    jobs: jobLifecycle({ sql: db.sql, queue, events }),
    jobMetrics: createJobMetrics(),
    streams: jobStreams({ db, logger, events, pollMs: overrides.streamTiming?.pollMs }),
  };
  return { services, limit };
}

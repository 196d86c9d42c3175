/**
 * The composition root: the one place that builds the service from its parts. `serve` and `api`
 * (main.ts), the tests and the benchmarks call `compose` for an app to listen with; `worker` calls
 * it for the job worker alone. Nothing else imports this folder (.dependency-cruiser.cjs).
 */
import type { Express } from 'express';
import type { Config } from '../config.ts';
import type { Handlers, Services, StreamHandlers, AuthHandlers } from '../context.ts';
import type { Database } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import { withDeadline } from '../db/deadline.ts';
import { createChunker } from '../jobs/chunker.ts';
import { startWorker } from '../jobs/worker.ts';
import { buildHttpApp } from '../http/app.ts';
import { identityHandlers, procedureHandlers, streamHandlers } from './handlers.ts';
import { createServices, type ServiceOverrides } from './services.ts';

export interface ComposeOptions {
  config: Config;
  db: Database;
  logger: Logger;
  /**
   * The worker running here takes jobs only once this settles (`serve`: its AI child listening, so
   * the first jobs do not fail over to a retry's backoff); a rejection fails `started`.
   */
  workAfter?: Promise<unknown> | undefined;
  /** Replace parts of the service (tests); the defaults are the real ones. */
  overrides?: ServiceOverrides & {
    handlers?: Handlers;
    streams?: StreamHandlers;
    authHandlers?: AuthHandlers;
    /** How long a workspace.index slice takes new documents (jobs/workspace-index.ts SLICE_MS when absent). */
    sliceMs?: number;
  };
}

export interface Composition {
  services: Services;
  /**
   * Resolves once the queue has started and the worker running here, if any, takes jobs; rejects
   * when either cannot. The app serves before (jobs.create waits for the queue): `serve` listens,
   * then awaits this and stops the service if it rejects.
   */
  started: Promise<void>;
  /** Stops the worker running here, if any (letting running jobs finish), and the queue; the database stays open. */
  stop(timeoutMs?: number): Promise<void>;
}

export interface AppComposition extends Composition {
  app: Express;
}

/**
 * The HTTP service (`role: 'api'`, the default): its services, the worker too when WORKER=inline,
 * and the Express app. `role: 'worker'`: the services and the job worker, no app.
 */
export async function compose(options: ComposeOptions & { role: 'worker' }): Promise<Composition>;
export async function compose(options: ComposeOptions & { role?: 'api' }): Promise<AppComposition>;
export async function compose(options: ComposeOptions & { role?: 'api' | 'worker' }): Promise<Composition | AppComposition> {
  const { config, db, logger, overrides = {} } = options;
  const role = options.role ?? 'api';
  const works = role === 'worker' || config.worker.mode === 'inline';
  const { services, limit } = await createServices({ config, db, logger, works, overrides });
  // The worker's chunking thread (jobs/chunker.ts), stopped once the queue has let its jobs finish.
  const chunker = works ? createChunker() : null;
  // The jobs' deadline for everything the worker does (db/deadline.ts), not the API's: the scope
  // follows the fetch loops started inside it to every delivery and the housekeeping.
  const started = !chunker
    ? services.queue.started
    : (options.workAfter ?? Promise.resolve()).then(() =>
        withDeadline(config.database.jobDeadlineMs, () =>
          startWorker({
            queue: services.queue,
            jobs: services.jobs,
            metrics: services.jobMetrics,
            sql: db.sql,
            storage: services.storage,
            ai: services.ai,
            plans: services.plans,
            maxCharacters: config.ai.extraction.maxCharacters,
            chunker,
            requests: services.requests,
            now: services.now,
            logger,
            concurrency: config.worker.concurrency,
            batchSize: config.worker.batchSize,
            embeddedDatabase: db.kind === 'embedded',
            ...(overrides.sliceMs === undefined ? {} : { sliceMs: overrides.sliceMs }),
          }),
        ),
      );
  started.catch(() => undefined); // its awaiter gets the error (serve, runWorker)
  const stop = async (timeoutMs?: number) => {
    await started.catch(() => undefined); // a worker still registering would otherwise outlive the stop
    await services.queue.stop(timeoutMs);
    await chunker?.close();
  };
  if (role === 'worker') {
    await started;
    return { services, started, stop };
  }
  const app = buildHttpApp({
    services,
    limit,
    handlers: { ...procedureHandlers, ...overrides.handlers },
    streams: { ...streamHandlers, ...overrides.streams },
    identityHandlers: { ...identityHandlers, ...overrides.authHandlers },
  });
  return { app, services, started, stop };
}

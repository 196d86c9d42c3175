/**
 * The worker: takes deliveries from the queue and runs them. A delivery of a job that is no longer
 * queued (canceled, finished, deleted) is done at once; otherwise the job goes running, its kind
 * runs, and it ends succeeded, queued again for a retry (the queue redelivers it after a backoff),
 * or failed with a readable message. Provider details stay in the log.
 *
 * Each delivery runs in a span `job.run <kind>` of a trace of its own, linked to the request that
 * created the job and to the job's first run (job-trace.ts); the kind's AI calls and statements
 * are its children. The worker also records the jobs' queue wait and run time (telemetry/job-metrics.ts).
 *
 * It also runs the housekeeping on the queue's schedule (housekeeping.ts), and the background
 * migrations this release ships (background-migrations.ts), slice after slice.
 */
import type { Logger } from '../logger.ts';
import { failed, inSpan, NEW_TRACE, setAttributes, SpanKind, tracingOn, type Span } from '../telemetry/tracing.ts';
import type { JobMetrics } from '../telemetry/job-metrics.ts';
import { AiServiceError, forRun } from '../ai-service/client.ts';
import { isRetryable, readableMessage } from './failure-message.ts';
import { pendingBackgroundMigrations, runSlice } from './background-migrations.ts';
import { runHousekeeping } from './housekeeping.ts';
import { queueReindexing } from './reindex.ts';
import { kinds, type KindDeps } from './kinds.ts';
import { ContinueLater } from './workspace-index.ts';
import { activeTrace, carrierOf, linksTo, spanContextOf } from './job-trace.ts';
import type { JobLifecycle } from './lifecycle.ts';
import type { Delivery, JobQueue } from './queue.ts';
import { asBackground } from '../db/request-gate.ts';

export interface WorkerOptions extends KindDeps {
  queue: JobQueue;
  /** Every change of a job's state goes through it (and wakes the streams once committed). */
  jobs: JobLifecycle;
  /** Its runs' queue wait and run time (telemetry/job-metrics.ts). */
  metrics: JobMetrics;
  logger: Logger;
  concurrency: number;
  /** Jobs each of the `concurrency` workers fetches and runs at once (queue.ts, Batches); 1 by default. */
  batchSize?: number;
  /** Housekeeping cron (pg-boss syntax); every 10 minutes by default. */
  housekeepingCron?: string;
  /** The database is the embedded one: housekeeping vacuums it (db/embedded-vacuum.ts). */
  embeddedDatabase?: boolean;
}

/** How long a job of an unknown kind waits before it is delivered again (to a newer worker, once one runs). */
export const UNKNOWN_KIND_DEFER_SECONDS = 15;

export async function startWorker(options: WorkerOptions): Promise<void> {
  const { queue, logger } = options;
  await queue.work((delivery) => runDelivery(options, delivery), options.concurrency, options.batchSize);
  await queue.workBackgroundMigrations(async (name) => {
    if ((await runSlice(name, options)) === 'more') await queue.queueBackgroundMigration(name);
  });
  await queue.every(options.housekeepingCron ?? '*/10 * * * *', async () => {
    logger.info(await runHousekeeping({ ...options, ...(options.embeddedDatabase ? { vacuum: { requests: options.requests } } : {}) }), 'housekeeping done');
    // A slice whose job failed for good left its migration unfinished: it goes on from its cursor.
    await queueBackgroundMigrations(options);
  });
  logger.info({ concurrency: options.concurrency, batchSize: options.batchSize ?? 1 }, 'job worker started');
  // A model switch shows at the first start on the new model, not ten minutes later. Not awaited:
  // the AI service may still be starting; housekeeping tries again.
  void queueReindexing(options).catch((error: unknown) => logger.warn({ err: error }, 're-indexing could not be queued'));
  await queueBackgroundMigrations(options);
}

async function queueBackgroundMigrations(options: WorkerOptions): Promise<void> {
  try {
    for (const name of await pendingBackgroundMigrations(options.sql, options.now())) await options.queue.queueBackgroundMigration(name);
  } catch (error) {
    options.logger.warn({ err: error }, 'background migrations could not be queued; housekeeping tries again');
  }
}

export async function runDelivery(options: WorkerOptions, delivery: Delivery): Promise<void> {
  // A new trace, not a child of the request: a job outlives it (job-trace.ts). The name gets the kind once the row is read.
  const span = { kind: SpanKind.CONSUMER, links: tracingOn() ? linksTo(delivery.trace, 'created_by') : [], attributes: { 'job.id': delivery.jobId, 'job.continued': delivery.continued } };
  // Its statements give way to the API's requests on the embedded database's one connection (db/request-gate.ts).
  await asBackground(options.requests, () => inSpan('job.run', span, (runSpan) => run(options, delivery, runSpan), NEW_TRACE));
}

async function run(options: WorkerOptions, delivery: Delivery, span: Span): Promise<void> {
  const { jobs, logger } = options;
  // This run's span: the job's first run's unless one is recorded already.
  const runTrace = activeTrace();
  // A running job's next slice (workspace.index) is not a new start.
  const job = delivery.continued ? await jobs.resumeRun(delivery.jobId, options.now(), runTrace) : await jobs.startRun(delivery.jobId, options.now(), runTrace);
  if (!job) {
    setAttributes(span, () => ({ 'job.skipped': true }));
    return; // canceled, already finished or deleted: nothing to run
  }
  if (tracingOn()) {
    span.updateName(`job.run ${job.kind}`);
    setAttributes(span, () => ({ 'job.kind': job.kind, 'job.attempt': job.attempt, 'organization.id': job.organizationId }));
    // A retry or a later slice links to the first run as well.
    const first = carrierOf(job.firstRunTrace);
    if (spanContextOf(first)?.spanId !== span.spanContext().spanId) span.addLinks(linksTo(first, 'first_run'));
  }
  const log = logger.child({ jobId: job.id, kind: job.kind, attempt: job.attempt });
  if (!Object.hasOwn(kinds, job.kind)) {
    // A kind a newer release added, created by its API while this release's workers still run
    // (docs/deploying.md, Upgrading): back in the queue, uncounted, for a worker that knows it.
    await delivery.defer(UNKNOWN_KIND_DEFER_SECONDS);
    await jobs.requeueRun(job.id, options.now());
    log.info({ deferSeconds: UNKNOWN_KIND_DEFER_SECONDS }, 'job of a kind this release does not know: left to a newer worker');
    return;
  }
  const { metrics } = options;
  metrics.waited(job.kind, job.organizationId, delivery.waitSeconds);
  const started = performance.now();
  try {
    // Every AI call of the run carries the delivery's signal (an abandoned run stops its calls) and
    // the job's payer (its turns in the AI service's queues); a job of an earlier release has none.
    const ai = forRun(options.ai, { signal: delivery.signal, payer: job.payer ?? undefined });
    const result = await kinds[job.kind](job, { ...options, ai }, { signal: delivery.signal, jobs }).finally(() => {
      metrics.ran(job.kind, job.organizationId, (performance.now() - started) / 1000);
    });
    if (result instanceof ContinueLater) {
      // Its turn is over: the next slice waits behind other organizations' jobs (lifecycle.ts continueRun).
      setAttributes(span, () => ({ 'job.continues': true }));
      await jobs.continueRun(job, options.now(), { startAfterSeconds: result.afterSeconds, trace: delivery.trace });
      log.info({ afterSeconds: result.afterSeconds }, 'job continues in its next turn');
      return;
    }
    // Null: it stopped meanwhile (a workspace.index job canceled while running), and stays as it is.
    if (await jobs.succeedRun(job.id, result, options.now())) log.info('job succeeded');
    else log.info('job ended while it ran (canceled)');
  } catch (error: unknown) {
    const retryable = isRetryable(error);
    failed(span, error);
    log.warn({ err: error, detail: error instanceof AiServiceError ? error.detail : undefined, retryable, finalAttempt: delivery.finalAttempt }, 'job run failed');
    if (retryable && !delivery.finalAttempt) {
      await jobs.requeueRun(job.id, options.now());
      throw error; // the queue retries it after its backoff
    }
    await jobs.failRun(job.id, readableMessage(error), options.now());
  }
}

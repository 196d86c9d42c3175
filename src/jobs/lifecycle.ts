/**
 * Every change of a job's state, each one transaction that also writes what goes with it: the
 * credits (charge or refund), the queue entry, the audit entry and the stream event. Once a
 * transaction has committed, the lifecycle itself wakes this process's workers (a new job) and
 * stream readers (every change): no caller has to remember to. Other processes learn of it by
 * pg-boss's and job_events' notifications, or by polling.
 *
 * States: queued → running → succeeded | failed; queued → canceled (jobs.cancel); running → queued
 * again while the worker retries a failed run. A transition names the states it starts from, so
 * a late or repeated delivery changes nothing.
 *
 * Locks, always in this order, so that no two of these transactions wait for each other in a
 * circle: the payer's queue lock (a create only: store.ts lockPayerQueue, which no other
 * transaction takes), the organization row (`for no key update`, only when a charge is checked against a plan:
 * credits/credit-ledger.ts; on the free plan its owner's allowance lock after it), then the job's row (the transition's update), then the event-order lock, last
 * (events-store.ts). Each transaction runs again when PostgreSQL still aborts it as a deadlock victim or
 * for serialization (retry-transaction.ts): they only touch the database.
 */
import type { Principal } from '../auth/principal.ts';
import type { Sql } from '../db/connection.ts';
import type { PlanLimits } from '../credits/plans.ts';
import { writeAudit } from '../audit/store.ts';
import { newId } from '../ids.ts';
import { ApiError } from '../contract/errors.ts';
import { retryingTransaction } from '../db/retry-transaction.ts';
import { payerOf } from '../organizations/payer.ts';
import { charge, refundJob, refundJobPart } from '../credits/credit-ledger.ts';
import type { JobEventBus } from './event-bus.ts';
import { appendJobEvent } from './events-store.ts';
import type { JobQueue } from './queue.ts';
import { activeTrace, type TraceCarrier } from './job-trace.ts';
import {
  addDocumentCredits,
  cancelPendingDocuments,
  countDocumentAttempt,
  endDocument,
  insertJobDocuments,
  stoppedWithPendingDocuments,
  type JobDocumentState,
  type PricedDocument,
} from './job-documents-store.ts';
import { addJobCredits, advanceProgress, findJob, insertJob, lockPayerQueue, queuedJobsOf, recentStarts, transitionJob, type JobChange, type JobKind, type JobRow, type JobStatus } from './store.ts';

/**
 * Retry-After of a create refused by the cap on queued jobs, at most: when none of the
 * organization's latest jobs started lately (long jobs, or no worker running), a guess at when
 * some have. Otherwise it is the time one job takes to leave the queue at the pace they have been
 * starting (queueFullRetryAfter), so a client loading documents one job each, which honours it,
 * comes back as a slot frees instead of 10 s later (issue 38: 90 such waits were most of a
 * 2 000-document load's time). A hint, not a promise: the refusal answers again until a job has gone.
 */
export const QUEUE_FULL_RETRY_AFTER_SECONDS = 10;
/** The window the pace is read over (recentStarts). */
const PACE_WINDOW_SECONDS = 30;

/** Seconds until one queued job has likely started, from `started` jobs in the last PACE_WINDOW_SECONDS: 1 to QUEUE_FULL_RETRY_AFTER_SECONDS. */
export function queueFullRetryAfter(started: number): number {
  if (started <= 0) return QUEUE_FULL_RETRY_AFTER_SECONDS;
  return Math.min(QUEUE_FULL_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(PACE_WINDOW_SECONDS / started)));
}

export interface NewJob {
  organizationId: string;
  workspaceId: string | null;
  documentId: string | null;
  kind: JobKind;
  input: Record<string, unknown>;
  createdBy: string | null;
  retryOf: string | null;
  /** What it is charged (credits/pricing.ts creditsFor); 0 for the operator's re-indexing, which is not the organization's doing. */
  credits: number;
  /** workspace.index: the documents it works on, each priced (their credits add up to `credits`). */
  documents?: readonly PricedDocument[];
}

/** How one document of a workspace.index job ended (workspace-index.ts). */
export interface DocumentEnd {
  state: Exclude<JobDocumentState, 'pending' | 'canceled'>;
  message?: string | null;
  chunks?: number | null;
}

export interface JobLifecycle {
  /**
   * Charges the job's credits, inserts the job and queues it (fairly among payers: queue.ts,
   * Fairness; organizations/payer.ts), in one transaction. A retry of a job that already has one answers 409 CONFLICT (the
   * unique jobs.retry_of, 0009), also when both retries run at once: the second waits for the first
   * and fails once it commits. With `maxQueued`, a payer whose organizations already have that many
   * queued jobs is refused with 429 TOO_MANY_REQUESTS and Retry-After, exactly at the cap however
   * many creates run at once (they take turns on the payer's queue lock). The active span (the
   * request's) goes with the job, for its runs to link to (job-trace.ts).
   */
  create(job: NewJob, o: { now: Date; plan: PlanLimits | null; retriedBy?: Principal; maxQueued?: number }): Promise<JobRow>;
  /**
   * queued → canceled; null when the job is not queued (any more). Its credits are refunded only
   * when none of its attempts has started (decisions.md): a job waiting for a retry after a failed
   * attempt (queued again, attempt ≥ 1) has had its work done, and keeps its charge.
   */
  cancel(jobId: string, now: Date): Promise<JobRow | null>;
  /**
   * A worker starts a run: queued (or running, after a worker died) → running. Null: nothing to run.
   * `runTrace`, the run's span, is recorded as the first run's unless one is (job-trace.ts).
   */
  startRun(jobId: string, now: Date, runTrace?: TraceCarrier): Promise<JobRow | null>;
  succeedRun(jobId: string, result: unknown, now: Date): Promise<JobRow | null>;
  failRun(jobId: string, message: string, now: Date): Promise<JobRow | null>;
  /** A failed run that the queue will retry after its backoff: the job waits, queued, again. */
  requeueRun(jobId: string, now: Date): Promise<JobRow | null>;
  /**
   * A running job's next slice starts (QueuedJob.continued): the job as it is when it is still
   * running; queued (a slice failed and the queue retries it) → running, counted as an attempt;
   * null when there is nothing to run (canceled, finished, deleted).
   */
  resumeRun(jobId: string, now: Date, runTrace?: TraceCarrier): Promise<JobRow | null>;
  /**
   * Queues a running job's next slice behind the organization's queued jobs, as a new job of the
   * organization would be (queue.ts, Fairness): a job over many documents takes its turns with
   * everyone else's instead of holding a worker. The job stays running meanwhile. `trace`, the
   * span that created the job (Delivery.trace), goes on with the slice: every slice links to it.
   */
  continueRun(job: JobRow, now: Date, o?: { startAfterSeconds?: number | undefined; trace?: TraceCarrier | null | undefined }): Promise<void>;
  /**
   * One document of a workspace.index job ended: recorded, refunded when it did not earn its
   * charge (failed, gone), and counted on the job's progress, with a stream event when `announce`.
   * Null when the job is not running any more (canceled meanwhile: the document's charge was given
   * back by the cancel) or the document was not pending.
   */
  endJobDocument(job: JobRow, documentId: string, end: DocumentEnd, o: { now: Date; announce: boolean }): Promise<JobRow | null>;
  /** A transient failure of one document of a workspace.index job: its attempts so far, or null when it is not pending. */
  retryJobDocument(jobId: string, documentId: string, message: string): Promise<number | null>;
  /**
   * Settles the workspace.index jobs that stopped with documents still pending (failed by a worker
   * of the release before this kind, which knows nothing of job_documents): those documents are
   * ended as canceled and refunded, as this release's failRun and cancel do (housekeeping.ts).
   * Answers how many jobs it settled.
   */
  settleStopped(now: Date): Promise<number>;
  /**
   * The rest of a workspace.index document's price, once the run knows its chunks (403
   * LIMIT_REACHED when the plan cannot cover it); nothing when the document is not pending any more.
   */
  chargeJobDocument(job: JobRow, documentId: string, amount: number, o: { now: Date; plan: PlanLimits | null }): Promise<void>;
}

/** The lifecycle of one service: its database, its queue, and the bus its stream readers listen on. */
export function jobLifecycle(deps: { sql: Sql; queue: JobQueue; events: JobEventBus }): JobLifecycle {
  const { sql, queue, events } = deps;

  const change = async (jobId: string, from: JobStatus[], to: JobChange, now: Date): Promise<JobRow | null> => {
    const row = await retryingTransaction(sql, async (tx) => {
      const changed = await transitionJob(tx, jobId, from, to, now);
      if (!changed) return null;
      // A workspace.index job that failed gives back what it had not done.
      const settled = to.status === 'failed' ? await settleDocuments(tx, changed, now) : changed;
      await appendJobEvent(tx, settled);
      return settled;
    });
    if (row) events.announce();
    return row;
  };

  return {
    async create(job, o) {
      // Before the transaction: a queue still starting (just after the service began to listen)
      // needs the connection the transaction would hold (queue.ts, Starting). One that could not
      // start is a dependency down (and the service is stopping): 503, not 500.
      await queue.started.catch(() => {
        throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The job queue is unavailable, try again later.' });
      });
      // Read here, not in the transaction, where the active span is the transaction's.
      const trace = activeTrace();
      const row = await retryingTransaction(sql, async (tx) => {
        const id = newId('job');
        const { credits } = job;
        // The queue lock first (see Locks), then the count it guards: nothing is charged for a refusal.
        const payer = await payerOf(tx, job.organizationId, o.plan);
        await lockPayerQueue(tx, payer);
        const queued = await queuedJobsOf(tx, payer, job.organizationId);
        if (o.maxQueued !== undefined && queued.count >= o.maxQueued) throw new QueueFull(payer, queued.count, o.maxQueued);
        // Then the charge: it locks the organization row before any row naming it is written (0005_jobs.sql).
        if (credits > 0) await charge(tx, { organizationId: job.organizationId, amount: credits, reason: job.retryOf ? 'job.retry' : 'job.create', jobId: id, now: o.now, plan: o.plan });
        // pg-boss's row before ours: the job's place in the fair queue is stored on both.
        const queueStart = await queue.enqueue(tx, id, { payer, lastStart: queued.lastStart }, { trace });
        const { documents, ...columns } = job;
        const progress = documents ? { documents: documents.length, done: 0, failed: 0 } : null;
        const inserted = await insertJob(tx, { id, ...columns, payer, queueStart, progress }, o.now);
        if (inserted === 'already-retried') throw new ApiError('CONFLICT', { message: 'This job was already retried; retry its retry instead.' });
        if (documents) await insertJobDocuments(tx, id, documents);
        if (o.retriedBy && job.retryOf) {
          await writeAudit(
            tx,
            {
              organizationId: job.organizationId,
              action: 'job.retry',
              actor: o.retriedBy,
              targetType: 'job',
              targetId: job.retryOf,
              metadata: { newJobId: id, kind: job.kind, credits },
            },
            o.now,
          );
        }
        await appendJobEvent(tx, inserted);
        return inserted;
      }).catch(async (error: unknown) => {
        if (!(error instanceof QueueFull)) throw error;
        // The pace is read after the rollback, off the payer's lock: a hint needs no consistency, and
        // one that cannot be read is the longest (the refusal stands, as a 429, not a failure).
        const since = new Date(o.now.getTime() - PACE_WINDOW_SECONDS * 1000);
        const started = await recentStarts(sql, job.organizationId, since, error.count + 2 * PACE_WINDOW_SECONDS).catch(() => 0);
        const whose = error.payer.startsWith('usr:') ? ["The organizations of this organization's owner have", 'they'] : ['The organization has', 'it'];
        throw new ApiError('TOO_MANY_REQUESTS', {
          message: `${whose[0]} ${error.count} queued jobs, the most ${whose[1]} may have (${error.max}); try again once some have run.`,
          headers: { 'Retry-After': String(queueFullRetryAfter(started)) },
        });
      });
      queue.wake();
      events.announce();
      return row;
    },

    async cancel(jobId, now) {
      const row = await retryingTransaction(sql, async (tx) => {
        // A running workspace.index job stops after the documents in hand (workspace-index.ts).
        const canceled =
          (await transitionJob(tx, jobId, ['queued'], { status: 'canceled' }, now)) ?? (await transitionJob(tx, jobId, ['running'], { status: 'canceled' }, now, { kind: 'workspace.index' }));
        if (!canceled) return null;
        let settled = canceled;
        if (canceled.kind === 'workspace.index') settled = await settleDocuments(tx, canceled, now);
        else if (canceled.attempt === 0) await refundJob(tx, canceled, now);
        await appendJobEvent(tx, settled);
        return settled;
      });
      if (row) events.announce();
      return row;
    },

    startRun: (jobId, now, runTrace) => change(jobId, ['queued', 'running'], { status: 'running', runTrace }, now),
    succeedRun: (jobId, result, now) => change(jobId, ['running'], { status: 'succeeded', result }, now),
    failRun: (jobId, message, now) => change(jobId, ['running'], { status: 'failed', errorMessage: message }, now),
    requeueRun: (jobId, now) => change(jobId, ['running'], { status: 'queued' }, now),

    async resumeRun(jobId, now, runTrace) {
      const started = await change(jobId, ['queued'], { status: 'running', runTrace }, now);
      if (started) return started;
      const job = await findJob(sql, jobId);
      return job?.status === 'running' ? job : null;
    },

    async continueRun(job, now, o = {}) {
      const { startAfterSeconds, trace } = o;
      await retryingTransaction(sql, async (tx) => {
        // Its payer as created; a job of an earlier release (none recorded) takes its organization's turns.
        const payer = job.payer ?? `org:${job.organizationId}`;
        await lockPayerQueue(tx, payer);
        const queued = await queuedJobsOf(tx, payer, job.organizationId);
        await queue.enqueue(tx, job.id, { payer, lastStart: queued.lastStart }, { continued: true, trace, ...(startAfterSeconds ? { startAfterSeconds } : {}) });
      });
      queue.wake();
    },

    async endJobDocument(job, documentId, end, o) {
      const row = await retryingTransaction(sql, async (tx) => {
        const ended = await endDocument(tx, job.id, documentId, end);
        if (!ended) return null;
        if (end.state === 'failed' || end.state === 'gone') {
          const refunded = await refundJobPart(tx, job, ended.credits, o.now);
          if (refunded > 0) await addJobCredits(tx, job.id, -refunded, o.now);
        }
        const advanced = await advanceProgress(tx, job.id, { done: 1, failed: end.state === 'failed' ? 1 : 0 }, o.now);
        if (advanced && o.announce) await appendJobEvent(tx, advanced);
        return advanced;
      });
      if (row && o.announce) events.announce();
      return row;
    },

    async settleStopped(now) {
      let settled = 0;
      for (const jobId of await stoppedWithPendingDocuments(sql, 100)) {
        // The refund is capped by what the job's ledger rows still hold (refundJobPart): a job the
        // old release refunded in full at its cancel gets nothing more.
        const done = await retryingTransaction(sql, async (tx) => {
          const job = await findJob(tx, jobId);
          if (!job || (job.status !== 'failed' && job.status !== 'canceled')) return false;
          await settleDocuments(tx, job, now);
          return true;
        });
        if (done) settled += 1;
      }
      return settled;
    },

    retryJobDocument: (jobId, documentId, message) => retryingTransaction(sql, (tx) => countDocumentAttempt(tx, jobId, documentId, message)),

    async chargeJobDocument(job, documentId, amount, o) {
      await retryingTransaction(sql, async (tx) => {
        await charge(tx, { organizationId: job.organizationId, amount, reason: job.retryOf ? 'job.retry' : 'job.create', jobId: job.id, now: o.now, plan: o.plan });
        await addJobCredits(tx, job.id, amount, o.now);
        // Last, in the lock order (the job's row before its documents'): a document the job no
        // longer has pending (canceled meanwhile) is not charged; the rollback takes the charge back.
        if (!(await addDocumentCredits(tx, job.id, documentId, amount))) throw new NotPending();
      }).catch((error: unknown) => {
        if (!(error instanceof NotPending)) throw error;
      });
    },
  };
}

/** create's rollback: the payer has `max` queued jobs already (`count`), answered 429 once the transaction is over. */
class QueueFull extends Error {
  readonly payer: string;
  readonly count: number;
  readonly max: number;
  constructor(payer: string, count: number, max: number) {
    super('the queued-job cap is reached');
    this.payer = payer;
    this.count = count;
    this.max = max;
  }
}

/** chargeJobDocument's rollback: the document is not pending any more. */
class NotPending extends Error {}

/**
 * A workspace.index job that stopped (canceled or failed): its documents still pending are ended
 * as canceled and what they were charged is given back; answers the row with its credits after.
 */
async function settleDocuments(tx: Parameters<typeof transitionJob>[0], job: JobRow, now: Date): Promise<JobRow> {
  if (job.kind !== 'workspace.index') return job;
  const pending = await cancelPendingDocuments(tx, job.id);
  const refunded = await refundJobPart(tx, job, pending.credits, now);
  if (refunded === 0) return job;
  await addJobCredits(tx, job.id, -refunded, now);
  return { ...job, credits: job.credits - refunded };
}

/**
 * A running document.index job that learned its text's size by extracting it pays the rest of its
 * price (credits/pricing.ts): charged against the plan like a new job (403 LIMIT_REACHED as an ApiError
 * when it does not fit), and added to the job's `credits`, so a cancel or a look at the job shows
 * what it cost. The organization is locked first, as in create. No event: the job's state is the same.
 */
export async function chargeRunningJob(sql: Sql, job: JobRow, amount: number, o: { now: Date; plan: PlanLimits | null }): Promise<void> {
  await retryingTransaction(sql, async (tx) => {
    await charge(tx, { organizationId: job.organizationId, amount, reason: job.retryOf ? 'job.retry' : 'job.create', jobId: job.id, now: o.now, plan: o.plan });
    await addJobCredits(tx, job.id, amount, o.now);
  });
}

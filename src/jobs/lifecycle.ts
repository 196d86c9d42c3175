/**
 * Every change of a job's state, each one transaction that also writes what goes with it: the
 * credits (charge or refund), the queue entry, the audit entry and the stream event. Callers wake
 * the queue and the stream readers after these return (the transaction has committed by then).
 *
 * States: queued → running → succeeded | failed; queued → canceled (jobs.cancel); running → queued
 * again while the worker retries a failed run. A transition names the states it starts from, so
 * a late or repeated delivery changes nothing.
 *
 * Locks, always in this order, so that no two of these transactions wait for each other in a
 * circle: the organization row (`for no key update`, only when a charge is checked against a plan:
 * credits.ts), then the job's row (the transition's update), then the event-order lock, last
 * (events.ts). Each transaction runs again when PostgreSQL still aborts it as a deadlock victim or
 * for serialization (retry-transaction.ts): they only touch the database.
 */
import type { Principal } from '../auth/principal.ts';
import type { Sql } from '../db/connection.ts';
import type { Db } from '../db/db.ts';
import type { PlanLimits } from '../billing/plans.ts';
import { writeAudit } from '../audit/audit-log.ts';
import { newId } from '../ids.ts';
import { ApiError } from '../contract/errors.ts';
import { isUniqueViolation } from '../db/errors.ts';
import { retryingTransaction } from '../db/retry-transaction.ts';
import { charge, refundJob } from './credits.ts';
import { appendJobEvent } from './events.ts';
import type { JobQueue } from './queue.ts';
import { JOB_COLUMNS, type JobKind, type JobRow, type JobStatus } from './store.ts';

export interface NewJob {
  organizationId: string;
  workspaceId: string | null;
  documentId: string | null;
  kind: JobKind;
  input: Record<string, unknown>;
  createdBy: string | null;
  retryOf: string | null;
  /** What it is charged (pricing.ts creditsFor); 0 for the operator's re-indexing, which is not the organization's doing. */
  credits: number;
}

/**
 * Charges the job's credits, inserts the job and queues it, in one transaction. A retry of a job
 * that already has one answers 409 CONFLICT (the unique jobs.retry_of, 0009), also when both
 * retries run at once: the second insert waits for the first and fails once it commits.
 */
export async function createJob(sql: Sql, queue: JobQueue, job: NewJob, o: { now: Date; plan: PlanLimits | null; retriedBy?: Principal }): Promise<JobRow> {
  return retryingTransaction(sql, async (tx) => {
    const id = newId('job');
    const { credits } = job;
    // The charge first: it locks the organization before anything else does (0005_jobs.sql).
    if (credits > 0) await charge(tx, { organizationId: job.organizationId, amount: credits, reason: job.retryOf ? 'job.retry' : 'job.create', jobId: id, now: o.now, plan: o.plan });
    const [row] = await tx<JobRow[]>`
      insert into jobs (id, organization_id, workspace_id, document_id, kind, input, credits, retry_of, created_by, created_at, updated_at)
      values (${id}, ${job.organizationId}, ${job.workspaceId}, ${job.documentId}, ${job.kind}, ${tx.json(job.input as never)}, ${credits},
              ${job.retryOf}, ${job.createdBy}, ${o.now}, ${o.now})
      returning ${tx.unsafe(JOB_COLUMNS)}`.catch((error: unknown) => {
      if (isUniqueViolation(error, 'jobs_retry_of')) throw new ApiError('CONFLICT', { message: 'This job was already retried; retry its retry instead.' });
      throw error;
    });
    if (o.retriedBy && job.retryOf) {
      await writeAudit(tx, {
        organizationId: job.organizationId,
        action: 'job.retry',
        actor: o.retriedBy,
        targetType: 'job',
        targetId: job.retryOf,
        metadata: { newJobId: id, kind: job.kind, credits },
      }, o.now);
    }
    await queue.enqueue(tx, id);
    await appendJobEvent(tx, row!);
    return row!;
  });
}

/**
 * A running document.index job that learned its text's size by extracting it pays the rest of its
 * price (pricing.ts): charged against the plan like a new job (403 LIMIT_REACHED as an ApiError
 * when it does not fit), and added to the job's `credits`, so a cancel or a look at the job shows
 * what it cost. The organization is locked first, as in createJob.
 */
export async function chargeRunningJob(sql: Sql, job: JobRow, amount: number, o: { now: Date; plan: PlanLimits | null }): Promise<void> {
  await retryingTransaction(sql, async (tx) => {
    await charge(tx, { organizationId: job.organizationId, amount, reason: job.retryOf ? 'job.retry' : 'job.create', jobId: job.id, now: o.now, plan: o.plan });
    await tx`update jobs set credits = credits + ${amount}, updated_at = ${o.now} where id = ${job.id}`;
  });
}

/**
 * queued → canceled; null when the job is not queued (any more). Its credits are refunded only
 * when none of its attempts has started (decisions.md): a job waiting for a retry after a failed
 * attempt (queued again, attempt ≥ 1) has had its work done, and keeps its charge.
 */
export async function cancelJob(sql: Sql, jobId: string, now: Date): Promise<JobRow | null> {
  return retryingTransaction(sql, async (tx) => {
    const row = await transition(tx, jobId, ['queued'], sql`status = 'canceled', finished_at = ${now}, updated_at = ${now}`);
    if (!row) return null;
    if (row.attempt === 0) await refundJob(tx, row, now);
    await appendJobEvent(tx, row);
    return row;
  });
}

/** A worker starts a run: queued (or running, after a worker died) → running. Null: nothing to run. */
export async function startRun(sql: Sql, jobId: string, now: Date): Promise<JobRow | null> {
  return changeWithEvent(sql, jobId, ['queued', 'running'], sql`status = 'running', attempt = attempt + 1, started_at = ${now}, error_message = null, updated_at = ${now}`);
}

export async function succeedRun(sql: Sql, jobId: string, result: unknown, now: Date): Promise<JobRow | null> {
  return changeWithEvent(sql, jobId, ['running'], sql`status = 'succeeded', result = ${sql.json(result as never)}, finished_at = ${now}, updated_at = ${now}`);
}

export async function failRun(sql: Sql, jobId: string, message: string, now: Date): Promise<JobRow | null> {
  return changeWithEvent(sql, jobId, ['running'], sql`status = 'failed', error_message = ${message}, finished_at = ${now}, updated_at = ${now}`);
}

/** A failed run that the queue will retry after its backoff: the job waits, queued, again. */
export async function requeueRun(sql: Sql, jobId: string, now: Date): Promise<JobRow | null> {
  return changeWithEvent(sql, jobId, ['running'], sql`status = 'queued', updated_at = ${now}`);
}

async function changeWithEvent(sql: Sql, jobId: string, from: JobStatus[], set: ReturnType<Sql>): Promise<JobRow | null> {
  return retryingTransaction(sql, async (tx) => {
    const row = await transition(tx, jobId, from, set);
    if (row) await appendJobEvent(tx, row);
    return row;
  });
}

async function transition(tx: Db, jobId: string, from: JobStatus[], set: ReturnType<Sql>): Promise<JobRow | null> {
  const [row] = await tx<JobRow[]>`
    update jobs set ${set} where id = ${jobId} and status in ${tx(from)}
    returning ${tx.unsafe(JOB_COLUMNS)}`;
  return row ?? null;
}

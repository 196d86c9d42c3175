/**
 * The jobs table's one owner: every statement that writes it is here (the lifecycle decides when,
 * in its transactions). SQL of the jobs group. A job row is what clients see (the contract's Job); pg-boss carries the
 * work separately (queue.ts). Rows come back in the contract's shape, with `input` and `result`
 * shown only once the job is finished (specification, "Job").
 */
import type { components } from '../../generated/types.ts';
import type { Db } from '../db/db.ts';
import type { Sql } from '../db/connection.ts';
import type { CursorPosition } from '../pagination/cursor.ts';
import type { Resource } from '../db/resource.ts';
import { isUniqueViolation } from '../db/errors.ts';

/** The contract's Job (date-time fields are Dates). */
export type Job = components['schemas']['Job'];
export type JobKind = Job['kind'];
export type JobStatus = Job['status'];
export type JobProgress = components['schemas']['JobProgress'];

/** W3C Trace Context (https://www.w3.org/TR/trace-context/) of one span, as its two headers would carry it (job-trace.ts). */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** A job row as stored: everything, whatever its state. */
export interface JobRow {
  id: string;
  organizationId: string;
  /** Whose turn it takes in the queue (organizations/payer.ts); null on a job of an earlier release. */
  payer: string | null;
  workspaceId: string | null;
  documentId: string | null;
  kind: JobKind;
  status: JobStatus;
  input: Record<string, unknown>;
  result: unknown;
  /** workspace.index: how many of its documents are done; null for the other kinds. */
  progress: JobProgress | null;
  errorMessage: string | null;
  credits: number;
  attempt: number;
  retryOf: string | null;
  createdBy: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  updatedAt: Date;
  /** created_at::text, exact to the microsecond, for cursors. */
  cursorAt: string;
  /**
   * Where the job's first run is in the traces (job-trace.ts; 0021): its span's W3C trace context,
   * which later attempts and slices link to. Null while tracing is off. Never shown to clients.
   */
  firstRunTrace: TraceCarrier | null;
}

// A constant list, so `unsafe` injects nothing from outside.
export const JOB_COLUMNS = `id, organization_id as "organizationId", payer, workspace_id as "workspaceId", document_id as "documentId",
  kind, status, input, result, progress, error_message as "errorMessage", credits, attempt, retry_of as "retryOf",
  created_by as "createdBy", created_at as "createdAt", started_at as "startedAt", finished_at as "finishedAt",
  updated_at as "updatedAt", created_at::text as "cursorAt", first_run_trace as "firstRunTrace"`;

export const FINISHED: readonly JobStatus[] = ['succeeded', 'failed', 'canceled'];

export function isFinished(status: JobStatus): boolean {
  return FINISHED.includes(status);
}

/**
 * The contract's Job for a row: `input` and `result` only once it is finished (and `result` only
 * when asked for and there is one), `error` as `{ message }`.
 */
export function toJob(row: JobRow, options: { includeResult?: boolean } = {}): Job {
  const finished = isFinished(row.status);
  return {
    id: row.id,
    organizationId: row.organizationId,
    workspaceId: row.workspaceId,
    documentId: row.documentId,
    kind: row.kind,
    status: row.status,
    ...(finished ? { input: row.input } : {}),
    ...(finished && (options.includeResult ?? true) && row.result !== null && row.result !== undefined ? { result: row.result } : {}),
    ...(row.progress ? { progress: row.progress } : {}),
    error: row.errorMessage === null ? null : { message: row.errorMessage },
    credits: row.credits,
    attempt: row.attempt,
    retryOf: row.retryOf,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    updatedAt: row.updatedAt,
  };
}

export async function findJob(sql: Db, id: string): Promise<JobRow | null> {
  const [row] = await sql<JobRow[]>`select ${sql.unsafe(JOB_COLUMNS)} from jobs where id = ${id}`;
  return row ?? null;
}

/** The loader of `resource: job` operations (composition/resources.ts): the stored row. */
export const jobResource: Resource<JobRow> = {
  load: (sql: Sql, id: string) => findJob(sql, id),
  organizationOf: (job) => job.organizationId,
  notFound: 'Job not found.',
};

export interface JobFilter {
  workspaceId?: string | undefined;
  documentId?: string | undefined;
  status?: JobStatus | undefined;
}

/** Newest first by (created_at, id); one row more than the page tells whether another page exists. */
export async function pageJobs(sql: Sql, organizationId: string, filter: JobFilter, limit: number, after: CursorPosition | null) {
  const rows = await sql<JobRow[]>`
    select ${sql.unsafe(JOB_COLUMNS)} from jobs
    where organization_id = ${organizationId}
      ${filter.workspaceId ? sql`and workspace_id = ${filter.workspaceId}` : sql``}
      ${filter.documentId ? sql`and document_id = ${filter.documentId}` : sql``}
      ${filter.status ? sql`and status = ${filter.status}` : sql``}
      ${after ? sql`and (created_at, id) < (${after.at}::timestamptz, ${after.id})` : sql``}
    order by created_at desc, id desc
    limit ${limit + 1}`;
  return { items: rows.slice(0, limit), last: rows.length > limit ? rows[limit - 1]! : null };
}

/** A job as inserted: what its creator decided (lifecycle.ts createJob). */
export interface JobInsert {
  id: string;
  organizationId: string;
  payer: string;
  workspaceId: string | null;
  documentId: string | null;
  kind: JobKind;
  input: Record<string, unknown>;
  credits: number;
  retryOf: string | null;
  createdBy: string | null;
  /** Its virtual start in the fair queue (queue.ts, Fairness); null for a job queued without one. */
  queueStart: number | null;
  /** workspace.index: its progress from the start (the documents it will work on, none done). */
  progress?: JobProgress | null;
}

/** The first half of the two-key advisory lock of an organization's queued jobs (an arbitrary constant of this service). */
const QUEUE_LOCK = 731_044_203;

/**
 * Takes the payer's queue lock (organizations/payer.ts) until `tx` ends: creates of one payer take
 * turns between counting its queued jobs and inserting theirs, so two cannot both fill the last
 * slot under the cap, nor both take the same place in the fair queue. Transaction-scoped (a
 * transaction pooler gives no session). Taken before anything else of the create (lifecycle.ts, Locks).
 */
export async function lockPayerQueue(tx: Db, payer: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(${QUEUE_LOCK}::int, hashtext(${payer}))`;
}

/**
 * The payer's queued jobs (those waiting for a retry included): how many, and the last virtual
 * start among them (null when none has one). A job an earlier release created has no payer and
 * counts for its organization. Reads the partial indexes jobs_queued_payer (0020) and jobs_queued
 * (0012), which hold only queued rows, so its cost follows the cap, not the history.
 */
export async function queuedJobsOf(tx: Db, payer: string, organizationId: string): Promise<{ count: number; lastStart: number | null }> {
  const [row] = await tx<{ count: number; lastStart: number | null }[]>`
    select count(*)::int as count, max(queue_start) as "lastStart" from jobs
    where status = 'queued' and (payer = ${payer} or (payer is null and organization_id = ${organizationId}))`;
  return row!;
}

/**
 * How many of the organization's `latest` jobs started at or after `since`: the pace its queue
 * moves at (lifecycle.ts queueFullRetryAfter). A bounded read of the jobs_page index whatever the
 * history; the caller asks for its queued count and then some, so the read reaches past the queued
 * ones to jobs that ran.
 */
export async function recentStarts(tx: Db, organizationId: string, since: Date, latest: number): Promise<number> {
  const [row] = await tx<{ started: number }[]>`
    select count(*) filter (where started_at >= ${since})::int as started
    from (select started_at from jobs where organization_id = ${organizationId} order by created_at desc, id desc limit ${latest}) recent`;
  return row!.started;
}

/** Inserts a queued job; 'already-retried' when another job already retries `retryOf` (the unique jobs.retry_of, 0009). */
export async function insertJob(tx: Db, job: JobInsert, now: Date): Promise<JobRow | 'already-retried'> {
  try {
    const [row] = await tx<JobRow[]>`
      insert into jobs (id, organization_id, payer, workspace_id, document_id, kind, input, credits, retry_of, created_by, queue_start, progress, created_at, updated_at)
      values (${job.id}, ${job.organizationId}, ${job.payer}, ${job.workspaceId}, ${job.documentId}, ${job.kind}, ${tx.json(job.input as never)}, ${job.credits},
              ${job.retryOf}, ${job.createdBy}, ${job.queueStart}, ${job.progress ? tx.json(job.progress) : null}, ${now}, ${now})
      returning ${tx.unsafe(JOB_COLUMNS)}`;
    return row!;
  } catch (error) {
    if (isUniqueViolation(error, 'jobs_retry_of')) return 'already-retried';
    throw error;
  }
}

/** The change of state a transition makes (lifecycle.ts); every one stamps updated_at. */
export type JobChange =
  { status: 'running'; runTrace?: TraceCarrier | undefined } | { status: 'succeeded'; result: unknown } | { status: 'failed'; errorMessage: string } | { status: 'queued' } | { status: 'canceled' };

/**
 * Applies `change` when the job is in one of the `from` states; null when it is not (any more), so
 * a late or repeated delivery changes nothing. A start with a `runTrace` records it as the first
 * run's unless one is recorded already; the row answered holds the first run's either way.
 */
export async function transitionJob(tx: Db, jobId: string, from: readonly JobStatus[], change: JobChange, now: Date, only: { kind?: JobKind } = {}): Promise<JobRow | null> {
  const set = (() => {
    switch (change.status) {
      case 'running':
        return tx`status = 'running', attempt = attempt + 1, started_at = ${now}, error_message = null, updated_at = ${now}
          ${change.runTrace ? tx`, first_run_trace = coalesce(first_run_trace, ${tx.json({ ...change.runTrace })})` : tx``}`;
      case 'succeeded':
        return tx`status = 'succeeded', result = ${tx.json(change.result as never)}, finished_at = ${now}, updated_at = ${now}`;
      case 'failed':
        return tx`status = 'failed', error_message = ${change.errorMessage}, finished_at = ${now}, updated_at = ${now}`;
      case 'queued':
        return tx`status = 'queued', updated_at = ${now}`;
      case 'canceled':
        return tx`status = 'canceled', finished_at = ${now}, updated_at = ${now}`;
    }
  })();
  const [row] = await tx<JobRow[]>`
    update jobs set ${set} where id = ${jobId} and status in ${tx(from as JobStatus[])} ${only.kind ? tx`and kind = ${only.kind}` : tx``}
    returning ${tx.unsafe(JOB_COLUMNS)}`;
  return row ?? null;
}

/**
 * Adds to what a running job is charged (the rest of a document.index price, once its size is
 * known), or takes off what it gave back (a negative amount: a workspace.index job's refunds).
 */
export async function addJobCredits(tx: Db, jobId: string, amount: number, now: Date): Promise<void> {
  await tx`update jobs set credits = credits + ${amount}, updated_at = ${now} where id = ${jobId}`;
}

/**
 * Counts documents done (and failed, of them) on a running job's progress; the row as it is now, or
 * null when the job is not running any more (canceled meanwhile). Counters in one statement, so
 * the runs of one job can record at once.
 */
export async function advanceProgress(tx: Db, jobId: string, step: { done: number; failed: number }, now: Date): Promise<JobRow | null> {
  const [row] = await tx<JobRow[]>`
    update jobs set progress = jsonb_build_object(
        'documents', (progress->>'documents')::int,
        'done', (progress->>'done')::int + ${step.done}::int,
        'failed', (progress->>'failed')::int + ${step.failed}::int),
      updated_at = ${now}
    where id = ${jobId} and status = 'running' and progress is not null
    returning ${tx.unsafe(JOB_COLUMNS)}`;
  return row ?? null;
}

/**
 * Ready documents with chunks of another model than `model`, and no index job queued or running:
 * the ones re-indexing must queue (reindex.ts).
 */
export async function documentsToReindex(sql: Sql, model: string, limit: number): Promise<{ id: string; organizationId: string; workspaceId: string }[]> {
  return sql`
    select d.id, d.organization_id as "organizationId", d.workspace_id as "workspaceId"
    from documents d
    where d.status = 'ready'
      -- The current generation only (text-store.ts replaceChunks): an older one left by a killed run is cleaned up by the next index.
      and exists (select 1 from document_chunks c where c.document_id = d.id and c.generation = d.chunk_generation and c.model <> ${model})
      and not exists (select 1 from jobs j where j.document_id = d.id and j.kind = 'document.index' and j.status in ('queued', 'running'))
    order by d.id
    limit ${limit}`;
}

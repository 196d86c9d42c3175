/**
 * The job_events table's one owner: the event log behind jobs.stream: every change of a job row appends one event (the job as
 * the stream shows it) in the same transaction as the change, so any API instance's stream sees
 * any worker's jobs, in order, and a client can resume after the last id it saw.
 *
 * Ordering: `id` comes from a sequence, and two transactions could commit their ids out of order
 * (5 after 6), so a reader that saw 6 would never see 5. Writers therefore take one
 * transaction-scoped advisory lock right before inserting: the next writer gets its id only after
 * the previous one committed, and ids become visible in increasing order. Insert the event as the
 * last statement of the transaction, so the lock is held for a moment only.
 *
 * Waking readers: `pg_notify('job_events')` on commit reaches streams in other processes that
 * LISTEN (external database); the job lifecycle's announcement on its service's bus (event-bus.ts)
 * wakes the ones in this process at once. Readers also poll, which alone guarantees progress.
 */
import type postgres from 'postgres';
import type { Db } from '../db/db.ts';
import type { Sql } from '../db/connection.ts';
import { toJob, type Job, type JobRow } from './store.ts';

/** The advisory lock key that orders event ids (an arbitrary constant of this service). */
const EVENT_ORDER_LOCK = 7_310_442_015;
export const JOB_EVENTS_CHANNEL = 'job_events';
/** Events are kept at least this long for Last-Event-Id resumes (decisions.md: at least 24 hours). */
export const EVENT_RETENTION_MS = 24 * 60 * 60_000;

export interface JobEvent {
  /** The SSE `id:`, a decimal string of the increasing event id. */
  id: string;
  organizationId: string;
  workspaceId: string | null;
  job: Job;
}

/** Appends the event of a job's new state; call inside the transaction that changed the row, last. */
export async function appendJobEvent(tx: Db, row: JobRow): Promise<void> {
  const job = toJob(row);
  await tx`select pg_advisory_xact_lock(${EVENT_ORDER_LOCK})`;
  await tx`
    insert into job_events (organization_id, workspace_id, job_id, data)
    values (${row.organizationId}, ${row.workspaceId}, ${row.id}, ${tx.json(JSON.parse(JSON.stringify(job)) as postgres.JSONValue)})`;
  await tx`select pg_notify(${JOB_EVENTS_CHANNEL}, ${row.organizationId})`;
}

interface EventRow {
  id: string;
  organizationId: string;
  workspaceId: string | null;
  data: Job;
}

/**
 * Events after `afterId`, oldest first, at most `limit`: of one organization (a stream's replay)
 * or of all (a process's reader). `data` is the job as JSON (dates as ISO strings).
 */
export async function eventsAfter(sql: Sql, afterId: string, options: { organizationId?: string; limit: number }): Promise<JobEvent[]> {
  // Ordered by the column, not the text output column of the same name ('10' < '9').
  const rows = await sql<EventRow[]>`
    select id::text as id, organization_id as "organizationId", workspace_id as "workspaceId", data
    from job_events
    where id > ${afterId}::bigint
      ${options.organizationId ? sql`and organization_id = ${options.organizationId}` : sql``}
    order by job_events.id
    limit ${options.limit}`;
  return rows.map((row) => ({ id: row.id, organizationId: row.organizationId, workspaceId: row.workspaceId, job: row.data }));
}

/** The newest event id ('0' when there is none): a new stream without Last-Event-Id starts after it. */
export async function latestEventId(sql: Sql): Promise<string> {
  const [row] = await sql<{ id: string }[]>`select coalesce(max(id), 0)::text as id from job_events`;
  return row!.id;
}

/** Deletes events older than the retention window; answers how many went. */
export async function pruneJobEvents(sql: Sql, now: Date): Promise<number> {
  const rows = await sql`delete from job_events where created_at < ${new Date(now.getTime() - EVENT_RETENTION_MS)} returning 1`;
  return rows.length;
}

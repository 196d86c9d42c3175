/**
 * SQL of the jobs group. A job row is what clients see (the contract's Job); pg-boss carries the
 * work separately (queue.ts). Rows come back in the contract's shape, with `input` and `result`
 * shown only once the job is finished (specification, "Job").
 */
import type { components } from '../../generated/types.ts';
import type { Db } from '../db/db.ts';
import type { Sql } from '../db/connection.ts';
import type { CursorPosition } from '../pagination/cursor.ts';
import type { Resource } from '../resources.ts';

/** The contract's Job (date-time fields are Dates). */
export type Job = components['schemas']['Job'];
export type JobKind = Job['kind'];
export type JobStatus = Job['status'];

/** A job row as stored: everything, whatever its state. */
export interface JobRow {
  id: string;
  organizationId: string;
  workspaceId: string | null;
  documentId: string | null;
  kind: JobKind;
  status: JobStatus;
  input: Record<string, unknown>;
  result: unknown;
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
}

// A constant list, so `unsafe` injects nothing from outside.
export const JOB_COLUMNS = `id, organization_id as "organizationId", workspace_id as "workspaceId", document_id as "documentId",
  kind, status, input, result, error_message as "errorMessage", credits, attempt, retry_of as "retryOf",
  created_by as "createdBy", created_at as "createdAt", started_at as "startedAt", finished_at as "finishedAt",
  updated_at as "updatedAt", created_at::text as "cursorAt"`;

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

/** The loader of `resource: job` operations (src/resources.ts): the stored row. */
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

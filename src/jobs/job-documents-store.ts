/**
 * The documents of a workspace.index job (job_documents, 0017): the one writer of that table. The
 * list is fixed when the job is created, each document with what it was charged; a run takes the
 * pending ones in id order and records how each ended (workspace-index.ts). What a document was
 * charged and did not earn (it failed, was deleted, or the job stopped first) is given back by the
 * caller, in the same transaction as the change of state here (lifecycle.ts).
 */
import type { Db } from '../db/db.ts';
import type { Sql } from '../db/connection.ts';

/** How a document of the job ended: indexed, already indexed as it is, failed, deleted meanwhile, or not reached before a cancel. */
export type JobDocumentState = 'pending' | 'indexed' | 'unchanged' | 'failed' | 'gone' | 'canceled';

export interface PricedDocument {
  id: string;
  credits: number;
}

export interface PendingDocument {
  documentId: string;
  credits: number;
  attempts: number;
}

/** A document a workspace.index job would work on, before it is priced (credits/pricing.ts priceDocuments). */
export interface DocumentToIndex {
  id: string;
  /** Chunks of its last extraction; 0 when it has none yet. */
  chunks: number;
  /** It was indexed before, with another model: the service re-indexes it for free (reindex.ts). */
  indexed: boolean;
}

/**
 * The workspace's ready documents a workspace.index job works on: those never indexed, and those
 * whose current chunks are of another model than `model`. `model` '' (the AI service did not
 * say) leaves the second kind out. In id order, the order a run takes them.
 */
export async function documentsToIndex(sql: Db, workspaceId: string, model: string): Promise<DocumentToIndex[]> {
  return sql<DocumentToIndex[]>`
    select d.id, coalesce(t.chunks, 0)::int as chunks, d.indexed_at is not null as indexed
    from documents d
    left join document_texts t on t.document_id = d.id
    where d.workspace_id = ${workspaceId} and d.status = 'ready'
      and (d.indexed_at is null
        or (${model} <> '' and exists (
          select 1 from document_chunks c where c.document_id = d.id and c.generation = d.chunk_generation and c.model <> ${model})))
    order by d.id`;
}

/** Records the job's documents (its create's transaction). */
export async function insertJobDocuments(tx: Db, jobId: string, documents: readonly PricedDocument[]): Promise<void> {
  // Bounded statements: a workspace may hold a hundred thousand documents.
  for (let start = 0; start < documents.length; start += INSERT_BATCH) {
    const batch = documents.slice(start, start + INSERT_BATCH);
    await tx`
      insert into job_documents (job_id, document_id, credits)
      select ${jobId}, * from unnest(${batch.map((d) => d.id)}::text[], ${batch.map((d) => d.credits)}::int[])`;
  }
}

const INSERT_BATCH = 5_000;

/** The next pending documents after `after` (id order), at most `limit`. */
export async function pendingDocuments(sql: Sql, jobId: string, after: string | null, limit: number): Promise<PendingDocument[]> {
  return sql<PendingDocument[]>`
    select document_id as "documentId", credits, attempts from job_documents
    where job_id = ${jobId} and state = 'pending' ${after === null ? sql`` : sql`and document_id > ${after}`}
    order by document_id limit ${limit}`;
}

export async function countPending(sql: Sql, jobId: string): Promise<number> {
  const [row] = await sql<{ count: number }[]>`select count(*)::int as count from job_documents where job_id = ${jobId} and state = 'pending'`;
  return row!.count;
}

/**
 * Adds to what a pending document was charged (the rest of its price, once the run has extracted
 * it); false when it is not pending any more (the job stopped meanwhile), and nothing changed.
 */
export async function addDocumentCredits(tx: Db, jobId: string, documentId: string, amount: number): Promise<boolean> {
  const rows = await tx`update job_documents set credits = credits + ${amount} where job_id = ${jobId} and document_id = ${documentId} and state = 'pending' returning 1`;
  return rows.length > 0;
}

/**
 * Ends a pending document in `state`; answers what it was charged, or null when it was not pending
 * any more (the job was canceled or failed while the run worked on it: nothing changes).
 */
export async function endDocument(
  tx: Db,
  jobId: string,
  documentId: string,
  end: { state: Exclude<JobDocumentState, 'pending' | 'canceled'>; message?: string | null; chunks?: number | null },
): Promise<{ credits: number } | null> {
  const [row] = await tx<{ credits: number }[]>`
    update job_documents set state = ${end.state}, message = ${end.message ?? null}, chunks = ${end.chunks ?? null}
    where job_id = ${jobId} and document_id = ${documentId} and state = 'pending'
    returning credits`;
  return row ?? null;
}

/** A transient failure of a pending document: tried again later in the job; answers its attempts so far, or null when it is not pending. */
export async function countDocumentAttempt(tx: Db, jobId: string, documentId: string, message: string): Promise<number | null> {
  const [row] = await tx<{ attempts: number }[]>`
    update job_documents set attempts = attempts + 1, message = ${message}
    where job_id = ${jobId} and document_id = ${documentId} and state = 'pending'
    returning attempts`;
  return row?.attempts ?? null;
}

/** Ends every pending document of the job as canceled (the job stopped: canceled or failed); answers their credits together. */
export async function cancelPendingDocuments(tx: Db, jobId: string): Promise<{ count: number; credits: number }> {
  const [row] = await tx<{ count: number; credits: number }[]>`
    with ended as (
      update job_documents set state = 'canceled' where job_id = ${jobId} and state = 'pending' returning credits)
    select count(*)::int as count, coalesce(sum(credits), 0)::int as credits from ended`;
  return row!;
}

/**
 * Jobs that stopped (failed or canceled) with documents still pending: a worker of the release
 * before workspace.index fails such a job without settling it (lifecycle.ts settleStopped).
 */
export async function stoppedWithPendingDocuments(sql: Sql, limit: number): Promise<string[]> {
  const rows = await sql<{ jobId: string }[]>`
    select distinct d.job_id as "jobId" from job_documents d join jobs j on j.id = d.job_id
    where d.state = 'pending' and j.status in ('failed', 'canceled') limit ${limit}`;
  return rows.map((row) => row.jobId);
}

/** A finished job's outcome, by state, with the chunks stored and the first failures (their reasons). */
export async function summarizeJobDocuments(sql: Sql, jobId: string, maxFailures: number) {
  const [counts] = await sql<{ documents: number; indexed: number; unchanged: number; gone: number; failed: number; chunks: number }[]>`
    select count(*)::int as documents,
      count(*) filter (where state = 'indexed')::int as indexed,
      count(*) filter (where state = 'unchanged')::int as unchanged,
      count(*) filter (where state = 'gone')::int as gone,
      count(*) filter (where state = 'failed')::int as failed,
      coalesce(sum(chunks) filter (where state in ('indexed', 'unchanged')), 0)::int as chunks
    from job_documents where job_id = ${jobId}`;
  const failures = await sql<{ documentId: string; message: string }[]>`
    select document_id as "documentId", coalesce(message, '') as message from job_documents
    where job_id = ${jobId} and state = 'failed' order by document_id limit ${maxFailures}`;
  return { ...counts!, failures };
}

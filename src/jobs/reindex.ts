/**
 * Re-indexing after the embedding model changes (decisions.md: vectors of different models are
 * never compared). Search reads only the chunks of the model that embedded its query, so once
 * EMBEDDING_PROVIDER or its model changes, documents indexed before are invisible to search until
 * they are indexed again. The worker finds them (at its start and in every housekeeping run) and
 * queues one document.index job for each, free of charge (the operator chose the switch, not the
 * organization); the jobs show on the organization's job list and stream like any other.
 * Progress: admin.system.status reports the documents still waiting (`ai.staleDocuments`), and
 * each run logs how many it queued.
 */
import type { AiClient } from '../ai-service/client.ts';
import type { Sql } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import type { JobLifecycle } from './lifecycle.ts';
import { documentsToReindex } from './store.ts';

/** Documents queued for re-indexing per run; the next run (or the queue draining) takes the rest. */
const BATCH = 500;

export interface ReindexDeps {
  sql: Sql;
  jobs: JobLifecycle;
  ai: AiClient;
  logger: Logger;
  now(): Date;
}

/** How many indexed documents have chunks of another model than `model` (admin.system.status). */
export async function countStaleDocuments(sql: Sql, model: string): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(distinct c.document_id)::int as count
    from document_chunks c join documents d on d.id = c.document_id
    where c.generation = d.chunk_generation and c.model <> ${model}`;
  return row!.count;
}

/**
 * The model the companion embeds with now, from its health report; null when it cannot embed or
 * does not answer, or when AI_URL is a hosted provider without the companion's health route (no
 * automatic re-indexing then: nothing is spent on a probe).
 */
async function currentModel(ai: AiClient): Promise<string | null> {
  return (await ai.health().catch(() => null))?.model ?? null;
}

/**
 * Queues the re-indexing of up to BATCH stale documents; answers how many it queued. Housekeeping
 * runs on one worker at a time; two workers starting together may both queue a document, which
 * costs one needless (free, idempotent) run.
 */
export async function queueReindexing(deps: ReindexDeps): Promise<{ model: string | null; queued: number }> {
  const model = await currentModel(deps.ai);
  if (!model) return { model, queued: 0 };
  const documents = await documentsToReindex(deps.sql, model, BATCH);
  for (const document of documents) {
    await deps.jobs.create(
      {
        organizationId: document.organizationId,
        workspaceId: document.workspaceId,
        documentId: document.id,
        kind: 'document.index',
        input: {},
        createdBy: null,
        retryOf: null,
        credits: 0,
      },
      { now: deps.now(), plan: null },
    );
  }
  if (documents.length > 0) {
    deps.logger.info({ model, queued: documents.length }, 're-indexing documents embedded by another model');
  }
  return { model, queued: documents.length };
}

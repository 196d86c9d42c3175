/**
 * What each job kind does (decisions.md, Jobs). Every kind is idempotent: a run repeated after a
 * lost lease or a retry writes the same rows again (extraction upserts, indexing replaces the
 * document's chunks with a new generation of them, text-store.ts). AI calls happen outside any
 * transaction. Indexing stores where each chunk came from (chunk-places.ts) and embeds only the
 * chunks whose text the document's stored chunks do not already hold (embed-chunks.ts). The text's
 * detected language picks the chunks' full-text configuration (documents/text-search-config.ts).
 *
 * A document that breaks a limit fails its job at once with a message its owner can act on
 * (JobFailure, or the AI service's refusal): a longer text than MAX_EXTRACTED_CHARACTERS, a text
 * that would pass the plan's storage, an index the plan's credits do not cover.
 */
import { findDocument, type Document } from '../documents/store.ts';
import { chargeRest, DocumentGone, extract, indexDocument } from './index-document.ts';
import type { KindDeps, KindRun } from './kind-deps.ts';
import { chargeRunningJob } from './lifecycle.ts';
import { indexCredits } from '../credits/pricing.ts';
import type { JobKind, JobRow } from './store.ts';
import { runWorkspaceIndex } from './workspace-index.ts';

export { JobFailure } from './job-failure.ts';
export type { KindDeps, KindRun } from './kind-deps.ts';

/** A kind answers its result, or ContinueLater (workspace.index: the rest in its next turn). */
export const kinds: Record<JobKind, (job: JobRow, deps: KindDeps, run: KindRun) => Promise<unknown>> = {
  'document.extract': async (job, deps) => {
    const { characters, pages } = await extract(await documentOf(job, deps), deps);
    return { characters, pages };
  },

  'document.index': async (job, deps) => {
    const { chunks, model } = await indexDocument(await documentOf(job, deps), deps, async (count) => {
      // Charged by its chunks (credits/pricing.ts), reused embeddings included; a re-index the operator asked for is free (credits 0).
      const due = job.credits > 0 ? indexCredits(count) - job.credits : 0;
      if (due > 0) {
        const plan = await deps.plans.limitsFor(job.organizationId);
        await chargeRest(count, due, () => chargeRunningJob(deps.sql, job, due, { now: deps.now(), plan }));
      }
    });
    return { chunks, ...(model ? { model } : {}) };
  },

  'workspace.index': (job, deps, run) => runWorkspaceIndex(job, deps, run),

  'text.embed': async (job, deps) => {
    const texts = (job.input as { texts: string[] }).texts;
    const { vectors, model } = await deps.ai.embed(texts, { organizationId: job.organizationId, purpose: 'document' });
    return { model, vectors };
  },
};

async function documentOf(job: JobRow, deps: KindDeps): Promise<Document> {
  const document = job.documentId ? await findDocument(deps.sql, job.documentId) : null;
  if (!document) throw new DocumentGone();
  return document;
}

/**
 * What a job costs in AI credits (decisions.md, Jobs): document.extract 1, text.embed 1,
 * document.index 2 per started block of 100 chunks of the document's extracted text (and
 * workspace.index that of each of its documents), so a book
 * costs what its embeddings cost and not what a memo does. The chunks are counted from the
 * extraction that exists when the job is created; without one the job is charged 2 and the rest
 * when it has extracted the text itself (jobs/kinds.ts). The count is stored with the text
 * (document_texts.chunks), so pricing reads one number instead of splitting the text again.
 */
import type { Db } from '../db/db.ts';
import { readChunkCount } from '../documents/text-store.ts';
import type { DocumentToIndex, PricedDocument } from '../jobs/job-documents-store.ts';
import type { JobKind } from '../jobs/store.ts';

const KIND_CREDITS = {
  'document.extract': 1,
  'text.embed': 1,
} as const;

export const INDEX_CREDITS_PER_BLOCK = 2;
export const CHUNKS_PER_BLOCK = 100;

/** document.index's price for a text of `chunks` chunks: at least one block. */
export function indexCredits(chunks: number): number {
  return INDEX_CREDITS_PER_BLOCK * Math.max(1, Math.ceil(chunks / CHUNKS_PER_BLOCK));
}

/**
 * A workspace.index job's documents, each priced as a document.index job of it would be now (from
 * its last extraction's chunks; one block without one, the rest once the job knows), and free when
 * it was indexed before with another model (the service re-indexes those itself: jobs/reindex.ts).
 */
export function priceDocuments(documents: readonly DocumentToIndex[]): PricedDocument[] {
  return documents.map((document) => ({ id: document.id, credits: document.indexed ? 0 : indexCredits(document.chunks) }));
}

/**
 * The credits a new job of this kind is charged. A workspace.index job: the sum of its documents'
 * prices (priceDocuments).
 */
export async function creditsFor(sql: Db, job: { kind: JobKind; documentId: string | null; documents?: readonly { credits: number }[] | undefined }): Promise<number> {
  switch (job.kind) {
    case 'document.index':
      return indexCredits((job.documentId ? await readChunkCount(sql, job.documentId) : null) ?? 0);
    case 'workspace.index':
      return (job.documents ?? []).reduce((sum, document) => sum + document.credits, 0);
    default:
      return KIND_CREDITS[job.kind];
  }
}

/**
 * The embeddings of a document's chunks for document.index (issue 24, item 5): a chunk whose text
 * the document already has a chunk of, embedded by the model the AI service embeds with now, keeps
 * that chunk's stored embedding (matched by the sha256 of the text); only the others are sent to
 * the AI service, EMBED_BATCH texts per call. Re-indexing a text that did not change embeds
 * nothing.
 *
 * The reused vectors must be of the model that would embed the rest, so the model comes first:
 * from the companion's health report (no embedding), else, with a provider that has no health
 * route, from the answer to the first batch (one call even when nothing changed, then reuse).
 */
import { createHash } from 'node:crypto';
import type { AiClient } from '../ai-service/client.ts';
import type { Sql } from '../db/connection.ts';
import { storedEmbeddings } from '../documents/text-store.ts';

/** Texts per embeddings request while indexing. */
export const EMBED_BATCH = 32;

export interface EmbeddedChunks {
  /** '' when there was nothing to embed. */
  model: string;
  /** In the order of the texts. */
  vectors: number[][];
  hashes: string[];
  /** How many texts were sent to the AI service (the rest were reused). */
  embedded: number;
}

export function textHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export async function embedChunks(
  texts: readonly string[], document: { id: string; organizationId: string }, deps: { sql: Sql; ai: AiClient },
): Promise<EmbeddedChunks> {
  const hashes = texts.map(textHash);
  const vectors: (number[] | undefined)[] = new Array(texts.length);
  if (texts.length === 0) return { model: '', vectors: [], hashes, embedded: 0 };
  let model = (await deps.ai.health().catch(() => null))?.model ?? '';
  let pending = texts.map((_, index) => index);
  const reuse = async () => {
    const stored = await storedEmbeddings(deps.sql, document.id, model, pending.map((index) => hashes[index]!));
    for (const index of pending) vectors[index] = stored.get(hashes[index]!);
    pending = pending.filter((index) => vectors[index] === undefined);
  };
  if (model) await reuse();
  let embedded = 0;
  while (pending.length > 0) {
    const batch = pending.splice(0, EMBED_BATCH);
    const answer = await deps.ai.embed(batch.map((index) => texts[index]!), { organizationId: document.organizationId });
    // Vectors of two models must never share a document (a provider switched in the middle, or
    // since its health report): the run fails as a transient error and the retry starts over.
    if (model && answer.model !== model) throw new Error(`the embedding model changed from ${model} to ${answer.model} while indexing`);
    batch.forEach((index, i) => (vectors[index] = answer.vectors[i]));
    embedded += batch.length;
    if (!model) {
      model = answer.model;
      await reuse();
    }
  }
  return { model, vectors: vectors as number[][], hashes, embedded };
}

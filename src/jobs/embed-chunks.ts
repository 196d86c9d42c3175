/**
 * The embeddings of a document's chunks for document.index (issue 24, item 5), handed to `store`
 * as they arrive, so the worker writes one batch while the model embeds the next. A chunk whose
 * text the document already has a chunk of, embedded by the model the AI service embeds with now,
 * keeps that chunk's stored embedding (matched by the sha256 of the text); only the others are
 * sent to the AI service, longest first, EMBED_BATCH texts a request, IN_FLIGHT requests at once,
 * and each distinct text once: a text the document repeats (a page's running header long enough
 * to be a chunk, a table's repeated rows, a pasted paragraph) is embedded once and its vector
 * stored for every chunk of it.
 *
 * The reused vectors must be of the model that would embed the rest, so the model comes first:
 * from the companion's health report (currentModel), else, with a provider that has no health
 * route, from the answer to the first batch (then reuse).
 */
import { createHash } from 'node:crypto';
import type { AiClient } from '../ai-service/client.ts';
import type { Sql } from '../db/connection.ts';
import { storedEmbeddings } from '../documents/text-store.ts';

/**
 * Texts per embeddings request while indexing, and requests in flight at once. The texts go
 * longest first, so each of the model's batches (EMBEDDING_BATCH_SIZE) holds texts of about one
 * length and pads little (bench/embedder-sweep.ts: 42 against 25 chunks/s on texts of mixed
 * lengths); with two requests in flight the model starts the next batch while this worker reads
 * and stores the last answer. 16 texts: an answer of 64 vectors took the embedded
 * worker's event loop (the API's) 20-25 ms to read, 16 a quarter of that (API p99 while
 * indexing 3.7 against 1.9 times idle, bench/api-latency.ts), at the same chunks/s.
 */
export const EMBED_BATCH = 16;
const IN_FLIGHT = 2;

/** Where the embeddings go: the chunks at `indexes` (positions in the texts), embedded by `model`; false stops the run (the document is gone). */
export type StoreEmbeddings = (model: string, indexes: number[], vectors: number[][]) => Promise<boolean>;

export interface EmbeddedChunks {
  /** '' when there was nothing to embed. */
  model: string;
  /** How many texts were sent to the AI service (the rest were reused). */
  embedded: number;
  /** false when `store` said the document is gone. */
  stored: boolean;
}

export function textHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The model the AI service embeds with now, from its health report; '' when it does not say. */
export async function currentModel(ai: AiClient): Promise<string> {
  return (await ai.health().catch(() => null))?.model ?? '';
}

export async function embedChunks(
  texts: readonly string[],
  hashes: readonly string[],
  document: { id: string; organizationId: string },
  deps: { sql: Sql; ai: AiClient },
  known: { model: string },
  store: StoreEmbeddings,
): Promise<EmbeddedChunks> {
  let model = known.model;
  let pending = texts.map((_, index) => index);
  let embedded = 0;
  let alive = true;
  const reuse = async () => {
    const stored = await storedEmbeddings(
      deps.sql,
      document.id,
      model,
      pending.map((index) => hashes[index]!),
    );
    const found = pending.filter((index) => stored.has(hashes[index]!));
    if (found.length > 0)
      alive = await store(
        model,
        found,
        found.map((index) => stored.get(hashes[index]!)!),
      );
    pending = pending.filter((index) => !stored.has(hashes[index]!));
  };
  // The chunks of each distinct text still to embed, by the index of its first chunk (the one sent).
  let repeats = new Map<number, number[]>();
  const send = async (batch: number[]) => {
    const answer = await deps.ai.embed(
      batch.map((index) => texts[index]!),
      { organizationId: document.organizationId, purpose: 'document' },
    );
    // Vectors of two models must never share a document (a provider switched in the middle, or
    // since its health report): the run fails as a transient error and the retry starts over.
    if (model && answer.model !== model) throw new Error(`the embedding model changed from ${model} to ${answer.model} while indexing`);
    model = answer.model;
    embedded += batch.length;
    // Each text's vector goes to every chunk of that text.
    const indexes: number[] = [];
    const vectors: number[][] = [];
    batch.forEach((index, i) => {
      for (const chunk of repeats.get(index) ?? [index]) {
        indexes.push(chunk);
        vectors.push(answer.vectors[i]!);
      }
    });
    if (alive) alive = await store(model, indexes, vectors);
  };
  if (model) await reuse();
  else if (pending.length > 0) {
    // A provider without a health route: its first answer names the model, then reuse.
    await send(pending.splice(0, EMBED_BATCH));
    await reuse();
  }
  repeats = repeatsOf(pending, hashes);
  pending = [...repeats.keys()];
  pending.sort((a, b) => texts[b]!.length - texts[a]!.length || a - b);
  const batches: number[][] = [];
  for (let i = 0; i < pending.length; i += EMBED_BATCH) batches.push(pending.slice(i, i + EMBED_BATCH));
  let next = 0;
  let failed = false;
  // IN_FLIGHT lanes take the batches in order. The first failure stops the other lane, and the run
  // fails once both have stopped, so nothing is stored after the caller cleans up.
  const lanes = await Promise.allSettled(
    Array.from({ length: Math.min(IN_FLIGHT, batches.length) }, async () => {
      try {
        while (alive && !failed && next < batches.length) await send(batches[next++]!);
      } catch (error) {
        failed = true;
        throw error;
      }
    }),
  );
  const failure = lanes.find((lane) => lane.status === 'rejected');
  if (failure) throw failure.reason;
  return { model, embedded, stored: alive };
}

/** The pending chunks grouped by text: the first chunk of each distinct text, with every chunk of that text. */
function repeatsOf(pending: readonly number[], hashes: readonly string[]): Map<number, number[]> {
  const first = new Map<string, number>();
  const groups = new Map<number, number[]>();
  for (const index of pending) {
    const hash = hashes[index]!;
    const at = first.get(hash);
    if (at === undefined) {
      first.set(hash, index);
      groups.set(index, [index]);
    } else groups.get(at)!.push(index);
  }
  return groups;
}

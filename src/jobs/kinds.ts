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
import type { Sql } from '../db/connection.ts';
import type { StorageDriver } from '../storage/driver.ts';
import type { AiClient } from '../ai-service/client.ts';
import type { PlanLookup } from '../credits/plans.ts';
import { ApiError } from '../contract/errors.ts';
import { findDocument, objectKey, type Document } from '../documents/store.ts';
import type { Chunker } from './chunker.ts';
import type { RequestGate } from '../db/request-gate.ts';
import { JobFailure } from './job-failure.ts';
import { chunkWriter, readIndexableText, saveDocumentText, searchConfigOf, touchIndexed, unchangedChunks } from '../documents/text-store.ts';
import { textSearchConfig } from '../documents/text-search-config.ts';
import { placeChunks, type ChunkPlace } from './chunk-places.ts';
import { currentModel, embedChunks, textHash } from './embed-chunks.ts';
import { chargeRunningJob } from './lifecycle.ts';
import { indexCredits } from '../credits/pricing.ts';
import type { JobKind, JobRow } from './store.ts';

export interface KindDeps {
  sql: Sql;
  storage: StorageDriver;
  ai: AiClient;
  plans: PlanLookup;
  /** MAX_EXTRACTED_CHARACTERS: the companion refuses longer texts already; checked again before storing. */
  maxCharacters: number;
  /** Chunks texts in a thread (chunker.ts): on the embedded database this worker shares the API's event loop. */
  chunker: Chunker;
  /** The API's requests in flight: chunk writes wait for them on the embedded database's one connection. */
  requests: RequestGate;
  now(): Date;
}

export { JobFailure } from './job-failure.ts';

export const kinds: Record<JobKind, (job: JobRow, deps: KindDeps) => Promise<unknown>> = {
  'document.extract': async (job, deps) => {
    const { characters, pages } = await extract(await documentOf(job, deps), deps);
    return { characters, pages };
  },

  'document.index': async (job, deps) => {
    const document = await documentOf(job, deps);
    const stored = await readIndexableText(deps.sql, document.id);
    const { chunks, language } = stored ? { chunks: placeChunks(await deps.chunker.chunk(stored.text), stored.pageStarts, stored.headings), language: stored.language } : await extract(document, deps);
    // Charged by its chunks (credits/pricing.ts), reused embeddings included; a re-index the operator asked for is free (credits 0).
    const due = job.credits > 0 ? indexCredits(chunks.length) - job.credits : 0;
    if (due > 0) await chargeRest(job, due, chunks.length, deps);
    const texts = chunks.map((chunk) => chunk.text);
    const hashes = texts.map(textHash);
    const placed = chunks.map((chunk, index) => ({ ...chunk, textHash: hashes[index]! }));
    const config = await searchConfigOf(deps.sql, textSearchConfig(language));
    const now = deps.now();
    const known = await currentModel(deps.ai);
    // The same text, places, model and configuration as the stored chunks: nothing to embed or write.
    if (known && (await unchangedChunks(deps.sql, document.id, known, config, placed))) {
      if (!(await touchIndexed(deps.sql, document.id, chunks.length, now))) throw gone();
      return { chunks: chunks.length, model: known };
    }
    // Stored as they are embedded (text-store.ts ChunkWriter), under a generation made current at the end.
    const writer = await chunkWriter(deps.sql, document, placed, config, now, deps.requests);
    try {
      const { model, stored } = await embedChunks(texts, hashes, document, deps, { model: known }, (model, indexes, vectors) => writer.write(model, indexes, vectors));
      if (!stored || !(await writer.finish())) throw gone();
      return { chunks: chunks.length, ...(model ? { model } : {}) };
    } catch (error) {
      await writer.abandon();
      throw error;
    }
  },

  'text.embed': async (job, deps) => {
    const texts = (job.input as { texts: string[] }).texts;
    const { vectors, model } = await deps.ai.embed(texts, { organizationId: job.organizationId });
    return { model, vectors };
  },
};

async function documentOf(job: JobRow, deps: KindDeps): Promise<Document> {
  const document = job.documentId ? await findDocument(deps.sql, job.documentId) : null;
  if (!document) throw gone();
  return document;
}

async function extract(document: Document, deps: KindDeps): Promise<{ chunks: ChunkPlace[]; characters: number; pages: number | null; language: string }> {
  const { text, pages, pageStarts, headings, language = 'und' } = await extractStored(document, deps);
  if (text.length > deps.maxCharacters) {
    throw new JobFailure(`The document's text has more than ${format(deps.maxCharacters)} characters; at most ${format(deps.maxCharacters)} can be stored.`);
  }
  const chunks = placeChunks(await deps.chunker.chunk(text), pageStarts ?? null, headings ?? null);
  const plan = await deps.plans.limitsFor(document.organizationId);
  const saved = await saveDocumentText(deps.sql, document, { text, pages, chunks: chunks.length, pageStarts, headings, language }, deps.now(), plan?.limits.storageBytes ?? null);
  if (saved === 'limit') {
    throw new JobFailure(`Storing the document's text would take the organization past its plan's storage of ${format(plan!.limits.storageBytes)} bytes.`);
  }
  if (!saved) throw gone();
  return { chunks, characters: saved.characters, pages, language };
}

async function chargeRest(job: JobRow, due: number, chunks: number, deps: KindDeps): Promise<void> {
  const plan = await deps.plans.limitsFor(job.organizationId);
  try {
    await chargeRunningJob(deps.sql, job, due, { now: deps.now(), plan });
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'LIMIT_REACHED') throw error;
    throw new JobFailure(`Indexing this document's ${format(chunks)} chunks costs ${indexCredits(chunks)} AI credits; the plan's credits left this period do not cover the ${due} still due.`);
  }
}

function gone(): JobFailure {
  return new JobFailure('The document was deleted.');
}

function format(value: number): string {
  return value.toLocaleString('en-US');
}

/**
 * The stored document sent to the AI service as it is read from storage: no copy of it is held
 * here (two copies of a 17 MB document and their collection stalled the API's event loop for tens
 * of milliseconds on the embedded database, where this worker shares it; docs/benchmarks.md). A
 * failed read fails the call, and its own error is what is thrown (a storage fault, not the
 * AI service's).
 */
async function extractStored(document: Document, deps: KindDeps) {
  const stream = await deps.storage.read(objectKey(document));
  let readError: unknown;
  stream.on('error', (error) => (readError ??= error));
  try {
    return await deps.ai.extract(stream, document.contentType, { organizationId: document.organizationId });
  } catch (error) {
    throw readError ?? error;
  } finally {
    stream.destroy();
  }
}

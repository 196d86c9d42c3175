/**
 * What each job kind does (decisions.md, Jobs). Every kind is idempotent: a run repeated after a
 * lost lease or a retry writes the same rows again (extraction upserts, indexing replaces the
 * document's chunks in one transaction). AI calls happen outside any transaction.
 */
import type { Sql } from '../db/connection.ts';
import type { StorageDriver } from '../storage/driver.ts';
import type { AiClient } from '../ai-service/client.ts';
import { findDocument, objectKey, type Document } from '../documents/store.ts';
import { chunkText } from './chunking.ts';
import { readDocumentText, replaceChunks, saveDocumentText } from '../documents/text-store.ts';
import type { JobKind, JobRow } from './store.ts';

export interface KindDeps {
  sql: Sql;
  storage: StorageDriver;
  ai: AiClient;
  now(): Date;
}

/** A failure a retry cannot fix, with a message fit for the job's `error`. */
export class JobFailure extends Error {
  override name = 'JobFailure';
}

/** Texts per embeddings request while indexing. */
const EMBED_BATCH = 32;

export const kinds: Record<JobKind, (job: JobRow, deps: KindDeps) => Promise<unknown>> = {
  'document.extract': async (job, deps) => {
    const { characters, pages } = await extract(await documentOf(job, deps), deps);
    return { characters, pages };
  },

  'document.index': async (job, deps) => {
    const document = await documentOf(job, deps);
    const text = (await readDocumentText(deps.sql, document.id))?.text ?? (await extract(document, deps)).text;
    const chunks = chunkText(text);
    const vectors: number[][] = [];
    let model = '';
    for (let i = 0; i < chunks.length; i += EMBED_BATCH) {
      const answer = await deps.ai.embed(chunks.slice(i, i + EMBED_BATCH));
      vectors.push(...answer.vectors);
      model = answer.model;
    }
    const stored = await replaceChunks(deps.sql, document, chunks.map((text, index) => ({ text, embedding: vectors[index]! })), deps.now());
    if (!stored) throw gone();
    return { chunks: chunks.length, ...(model ? { model } : {}) };
  },

  'text.embed': async (job, deps) => {
    const texts = (job.input as { texts: string[] }).texts;
    const { vectors, model } = await deps.ai.embed(texts);
    return { model, vectors };
  },
};

async function documentOf(job: JobRow, deps: KindDeps): Promise<Document> {
  const document = job.documentId ? await findDocument(deps.sql, job.documentId) : null;
  if (!document) throw gone();
  return document;
}

async function extract(document: Document, deps: KindDeps): Promise<{ text: string; characters: number; pages: number | null }> {
  const bytes = await readAll(await deps.storage.read(objectKey(document)));
  const { text, pages } = await deps.ai.extract(bytes, document.contentType);
  const saved = await saveDocumentText(deps.sql, document, { text, pages }, deps.now());
  if (!saved) throw gone();
  return { text, characters: saved.characters, pages };
}

function gone(): JobFailure {
  return new JobFailure('The document was deleted.');
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Uint8Array> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(Buffer.isBuffer(part) ? part : Buffer.from(part as string));
  return Buffer.concat(parts);
}

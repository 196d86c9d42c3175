/**
 * The rows of bench/large-data.ts, workspace by workspace in batches of documents: each batch's
 * documents and texts by two multi-row inserts, then its chunks by a binary COPY
 * (large-data-copy.ts) on the next free lane, so two COPY statements run at once (the server's
 * two cores compute the generated full-text columns side by side) while the next batch is made.
 */
import { createHash } from 'node:crypto';
import type postgres from 'postgres';
import { LOCAL_EMBEDDING_MODEL } from '../src/ai-service/protocol.ts';
import { newId } from '../src/ids.ts';
import { BinaryCopy, type Field } from './large-data-copy.ts';
import type { Corpus, GeneratedDocument } from './large-data-corpus.ts';

/** Chunks per document, about (the last of a workspace has what is left). */
const CHUNKS_PER_DOCUMENT = 20;
/** Characters of text a chunk takes on average (1 000-character chunks overlapping by 200, cut at word ends). */
const CHARACTERS_PER_CHUNK = 790;
/** Documents per batch: one insert of documents, one of texts, then one COPY of their chunks. */
const BATCH_DOCUMENTS = 100;
/** COPY statements at once, each on a connection of its own (the caller's pool needs one more for the inserts). */
export const COPY_LANES = 2;
/** The documents' language (document_texts.language): English, so search_config `english`. */
export const LANGUAGE = 'eng';
const DAY_MS = 86_400_000;

/** The columns of document_chunks written (search_vector and search_length are generated from them). */
export const CHUNK_COLUMNS = [
  'id',
  'organization_id',
  'workspace_id',
  'document_id',
  'index',
  'text',
  'model',
  'embedding',
  'created_at',
  'start_offset',
  'end_offset',
  'first_page',
  'last_page',
  'heading_path',
  'text_hash',
  'generation',
  'search_config',
  'search_text',
] as const;

/** A workspace generated: its chunks and documents. */
export interface LargeDataWorkspace {
  id: string;
  slug: string;
  chunks: number;
  documents: number;
}

export interface LoadContext {
  generation: 'per-document' | 'zero';
  organizationId: string;
  uploadedBy: string | null;
  workspaces: LargeDataWorkspace[];
  configOid: number;
  log(line: string): void;
  total: number;
}

/** Every workspace's documents, batch by batch: documents and texts inserted, then their chunks copied on the next free lane. */
export async function loadRows(sql: postgres.Sql, corpus: Corpus, context: LoadContext): Promise<{ documents: number; chunks: number; seconds: number }> {
  const started = performance.now();
  const lanes: Promise<void>[] = Array.from({ length: COPY_LANES }, () => Promise.resolve());
  let documents = 0;
  let chunks = 0;
  let batchNumber = 0;
  let reported = 0;
  const now = Date.now();
  for (const workspace of context.workspaces) {
    let remaining = workspace.chunks;
    while (remaining > 0) {
      const batch: GeneratedDocument[] = [];
      while (remaining > 0 && batch.length < BATCH_DOCUMENTS) {
        const wanted = Math.min(CHUNKS_PER_DOCUMENT, remaining);
        const document = corpus.document(wanted * CHARACTERS_PER_CHUNK, wanted);
        if (document.chunks.length === 0) continue;
        batch.push(document);
        remaining -= document.chunks.length;
      }
      const rows = await insertDocuments(sql, corpus, context, workspace, batch, now);
      workspace.documents += batch.length;
      documents += batch.length;
      chunks += rows.reduce((sum, row) => sum + row.document.chunks.length, 0);
      const lane = batchNumber++ % COPY_LANES;
      // A lane takes its next batch once its last COPY has ended; the other lane works meanwhile.
      await lanes[lane];
      lanes[lane] = copyChunks(sql, corpus, context, workspace, rows);
      if (chunks - reported >= context.total / 10) {
        reported = chunks;
        const seconds = (performance.now() - started) / 1000;
        context.log(`large-data:   ${chunks} of ${context.total} chunks generated (${seconds.toFixed(0)} s, ${(chunks / seconds).toFixed(0)}/s)`);
      }
    }
  }
  await Promise.all(lanes);
  return { documents, chunks, seconds: (performance.now() - started) / 1000 };
}

interface DocumentRow {
  id: string;
  generation: string;
  createdAt: Date;
  indexedAt: Date;
  document: GeneratedDocument;
}

async function insertDocuments(sql: postgres.Sql, corpus: Corpus, context: LoadContext, workspace: LargeDataWorkspace, batch: GeneratedDocument[], now: number): Promise<DocumentRow[]> {
  // One generation per document, from the sequence indexing takes them from (text-store.ts, chunkWriter), or 0.
  const generations =
    context.generation === 'zero'
      ? batch.map(() => ({ generation: '0' }))
      : await sql<{ generation: string }[]>`select nextval('document_chunk_generation')::text as generation from generate_series(1, ${batch.length})`;
  const rows = batch.map((document, i): DocumentRow => {
    const createdAt = new Date(now - Math.floor(corpus.random.next() * 365 * DAY_MS));
    return { id: newId('doc'), generation: generations[i]!.generation, createdAt, indexedAt: new Date(createdAt.getTime() + 5_000 + corpus.random.int(60_000)), document };
  });
  await sql`insert into documents ${sql(
    rows.map(({ id, generation, createdAt, indexedAt, document }) => {
      const bytes = Buffer.byteLength(document.text);
      return {
        id,
        organization_id: context.organizationId,
        workspace_id: workspace.id,
        uploaded_by: context.uploadedBy,
        name: `${document.title}.${document.contentType.extension}`,
        content_type: document.contentType.type,
        // What was uploaded: the text itself, or a PDF about three times its text.
        size: document.contentType.type === 'application/pdf' ? bytes * 3 : bytes,
        status: 'ready',
        extracted_characters: [...document.text].length,
        extracted_pages: document.pageStarts?.length ?? null,
        extracted_at: new Date(createdAt.getTime() + 2_000),
        indexed_at: indexedAt,
        chunk_count: document.chunks.length,
        chunk_generation: generation,
        text_bytes: bytes,
        created_at: createdAt,
        updated_at: indexedAt,
      };
    }),
  )}`;
  await sql`insert into document_texts ${sql(
    rows.map(({ id, createdAt, document }) => ({
      document_id: id,
      organization_id: context.organizationId,
      text: document.text,
      characters: [...document.text].length,
      pages: document.pageStarts?.length ?? null,
      chunks: document.chunks.length,
      page_starts: document.pageStarts,
      headings: document.headings ? sql.json(document.headings as never) : null,
      language: LANGUAGE,
      extracted_at: new Date(createdAt.getTime() + 2_000),
    })),
  )}`;
  return rows;
}

async function copyChunks(sql: postgres.Sql, corpus: Corpus, context: LoadContext, workspace: LargeDataWorkspace, rows: DocumentRow[]): Promise<void> {
  const stream = await sql`copy document_chunks (${sql.unsafe(CHUNK_COLUMNS.map(quoteIdentifier).join(', '))}) from stdin with (format binary)`.writable();
  const copy = new BinaryCopy(stream);
  for (const { id, generation, indexedAt, document } of rows) {
    const direction = corpus.documentDirection();
    for (const [index, chunk] of document.chunks.entries()) {
      const fields: Field[] = [
        { text: newId('chk') },
        { text: context.organizationId },
        { text: workspace.id },
        { text: id },
        { int4: index },
        { text: chunk.text },
        { text: LOCAL_EMBEDDING_MODEL },
        { vector: corpus.embedding(document.topic, direction) },
        { timestamptz: indexedAt },
        { int4: chunk.start },
        { int4: chunk.end },
        { int4: chunk.firstPage },
        { int4: chunk.lastPage },
        { textArray: chunk.headingPath },
        // As indexing hashes a chunk (jobs/embed-chunks.ts, textHash).
        { text: createHash('sha256').update(chunk.text).digest('hex') },
        { int8: generation },
        { oid: context.configOid },
        { text: chunk.searchText ?? null },
      ];
      await copy.row(fields);
    }
    // Lets the other lane's socket drain while this one is generated.
    await new Promise((resolve) => setImmediate(resolve));
  }
  await copy.end();
}

export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

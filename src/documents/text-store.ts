/**
 * SQL of what the jobs learn about a document: its extracted text (document_texts, documents.text)
 * and its embedded chunks (document_chunks, searched in chunk-search.ts); the only module that
 * writes those two tables. What the document row records of them (`extracted`, `indexedAt`) is
 * written through store.ts. Writers answer null when the document was deleted meanwhile.
 */
import type { Sql } from '../db/connection.ts';
import type { Db } from '../db/db.ts';
import { lockOrganization } from '../organizations/store.ts';
import type postgres from 'postgres';
import { isForeignKeyViolation, lockDocument, organizationUsage, setExtracted, setIndexed, setIndexedGeneration, type Document } from './store.ts';
import { newId } from '../ids.ts';
import type { TextHeading } from '../ai-service/protocol.ts';

export interface DocumentText {
  text: string;
  characters: number;
  pages: number | null;
}

export async function readDocumentText(sql: Db, documentId: string): Promise<DocumentText | null> {
  const [row] = await sql<DocumentText[]>`select text, characters, pages from document_texts where document_id = ${documentId}`;
  return row ?? null;
}

/** The stored text with what citations are derived from: where its pages start and its headings (null when none were stored). */
export interface IndexableText {
  text: string;
  pageStarts: number[] | null;
  headings: TextHeading[] | null;
}

export async function readIndexableText(sql: Db, documentId: string): Promise<IndexableText | null> {
  const [row] = await sql<IndexableText[]>`
    select text, page_starts as "pageStarts", headings from document_texts where document_id = ${documentId}`;
  return row ?? null;
}

/** How many chunks the document's stored text makes, or null when it has none (credits/pricing.ts). */
export async function readChunkCount(sql: Db, documentId: string): Promise<number | null> {
  const [row] = await sql<{ chunks: number }[]>`select chunks from document_texts where document_id = ${documentId}`;
  return row?.chunks ?? null;
}

/**
 * Stores the text of an extraction and the document's `extracted` summary. The text's UTF-8 bytes
 * count toward the organization's storage (`documents.text_bytes`): with a limit, the
 * organization's row is locked first (the order completeDocument takes) and a text that would take
 * the organization past it is not stored ('limit'). null when the document was deleted meanwhile.
 */
export async function saveDocumentText(
  sql: Sql, document: Pick<Document, 'id' | 'organizationId'>,
  extracted: { text: string; pages: number | null; chunks: number; pageStarts?: number[] | undefined; headings?: TextHeading[] | undefined }, now: Date,
  limitBytes: number | null = null,
): Promise<DocumentText | 'limit' | null> {
  // Characters as a reader counts them (code points), not UTF-16 units.
  const characters = [...extracted.text].length;
  const bytes = Buffer.byteLength(extracted.text, 'utf8');
  return sql.begin(async (tx) => {
    if (limitBytes !== null) {
      await lockOrganization(tx, document.organizationId);
      const current = await lockDocument(tx, document.id);
      if (!current) return null;
      if ((await organizationUsage(tx, document.organizationId)) - current.textBytes + bytes > limitBytes) return 'limit';
    }
    if (!(await setExtracted(tx, document.id, { characters, pages: extracted.pages, textBytes: bytes }, now))) return null;
    const pageStarts = extracted.pageStarts ?? null;
    const headings = extracted.headings && extracted.headings.length > 0 ? tx.json(extracted.headings as never) : null;
    await tx`
      insert into document_texts (document_id, organization_id, text, characters, pages, chunks, page_starts, headings, extracted_at)
      values (${document.id}, ${document.organizationId}, ${extracted.text}, ${characters}, ${extracted.pages}, ${extracted.chunks},
              ${pageStarts}::integer[], ${headings}, ${now})
      on conflict (document_id) do update
        set text = excluded.text, characters = excluded.characters, pages = excluded.pages, chunks = excluded.chunks,
            page_starts = excluded.page_starts, headings = excluded.headings, extracted_at = excluded.extracted_at`;
    return { text: extracted.text, characters, pages: extracted.pages };
  }) as Promise<DocumentText | 'limit' | null>;
}

/** pgvector's text form of a vector. */
export function vectorLiteral(vector: readonly number[]): string {
  return `[${vector.join(',')}]`;
}

/** A chunk as indexing stores it: its text and embedding, where it came from (chunk-places.ts) and its text's hash. */
export interface StoredChunk {
  text: string;
  embedding: number[];
  start: number;
  end: number;
  firstPage: number | null;
  lastPage: number | null;
  headingPath: string[] | null;
  /** sha256 (hex) of the text (embed-chunks.ts): a re-index reuses the embedding of a chunk with the same text and model. */
  textHash: string;
}

/**
 * The embeddings of the document's chunks of `model` whose text hash is one of `hashes`, by hash:
 * what a re-index reuses instead of embedding the same text again. Only the document's own chunks,
 * so nothing crosses from one tenant to another.
 */
export async function storedEmbeddings(sql: Db, documentId: string, model: string, hashes: readonly string[]): Promise<Map<string, number[]>> {
  if (hashes.length === 0) return new Map();
  const rows = await sql<{ textHash: string; embedding: string }[]>`
    select distinct on (text_hash) text_hash as "textHash", embedding::text as embedding
    from document_chunks
    where document_id = ${documentId} and model = ${model} and text_hash = any(${[...new Set(hashes)]}::text[])`;
  // pgvector's text form is a JSON array of numbers.
  return new Map(rows.map((row) => [row.textHash, JSON.parse(row.embedding) as number[]]));
}

/**
 * Chunks per insert statement. A chunk costs its HNSW and GIN index entries, about 9 ms on the
 * embedded database on two busy cores, and a request queued on the one connection waits for the
 * statement in progress: with 4 a query's p99 while 300 chunks are stored was 66-70 ms (36-43 ms
 * p50), with 10 130-160 ms, with 50 0.5-0.8 s, and with the one transaction of before 2.2-2.9 s
 * (bench/chunk-storage.ts). The whole store took about 15% longer than in one transaction.
 */
export const CHUNK_BATCH = 4;
/** Rows per delete statement: a delete only marks rows (the indexes are cleaned by vacuum), so more go at once. */
const DELETE_BATCH = 100;

/**
 * Replaces the document's chunks with these, embedded by `model`; false when the document is gone.
 * A document's chunks are always of one model, and a reader never sees some old and some new.
 *
 * In short statements, not one long transaction: the document's chunks were once written in one
 * transaction, which held the embedded database's only connection for as long as it took (the API
 * waited up to 1.4 s; docs/benchmarks.md). Now the chunks go in under a new generation, CHUNK_BATCH
 * rows per statement (each its own transaction), invisible to search (it reads `generation = documents.chunk_generation`);
 * one short transaction then makes them the document's (setIndexedGeneration); the old generation
 * is deleted DELETE_BATCH rows at a time. Two runs of one document at once: generations are handed
 * out in increasing order and only a newer one replaces the current, so the later run's chunks win
 * and the earlier one deletes its own; each run deletes only older generations than its own, so it
 * never touches the rows of a later run still being written. Rows a killed run left behind are
 * older than the next run's, which deletes them.
 */
export async function replaceChunks(
  sql: Sql, document: Pick<Document, 'id' | 'organizationId' | 'workspaceId'>, model: string, chunks: StoredChunk[], now: Date,
): Promise<boolean> {
  if (await unchanged(sql, document.id, model, chunks)) {
    // A re-index of the same text: the chunks stored are these already; only the index's time changes.
    return (await sql.begin(async (tx) => {
      if (!(await lockDocument(tx, document.id))) return false;
      await setIndexed(tx, document.id, chunks.length, now);
      return true;
    })) as boolean;
  }
  const [row] = await sql<{ generation: string }[]>`select nextval('document_chunk_generation')::text as generation`;
  const generation = row!.generation;
  try {
    for (let i = 0; i < chunks.length; i += CHUNK_BATCH) {
      const rows = chunks.slice(i, i + CHUNK_BATCH).map((chunk, offset) => chunkRow(document, model, chunk, i + offset, generation, now));
      await sql`insert into document_chunks ${sql(rows)}`;
    }
  } catch (error) {
    // The document was deleted meanwhile (with its chunks, this run's included).
    if (isForeignKeyViolation(error)) return false;
    throw error;
  }
  const current = await sql.begin(async (tx) => {
    if (!(await lockDocument(tx, document.id))) return 'gone';
    return (await setIndexedGeneration(tx, document.id, generation, chunks.length, now)) ? 'current' : 'superseded';
  });
  if (current === 'gone') return false;
  // Superseded: a later run finished first; its chunks stay and this run's go.
  await deleteChunksInBatches(sql, document.id, current === 'current' ? sql`generation < ${generation}::bigint` : sql`generation = ${generation}::bigint`);
  return true;
}

/** Whether the document's current chunks are these, by model, text hash and place, in order (their embeddings follow from model and text). */
async function unchanged(sql: Sql, documentId: string, model: string, chunks: StoredChunk[]): Promise<boolean> {
  if (chunks.length === 0) return false;
  const rows = await sql<{ model: string; textHash: string | null; start: number | null; end: number | null; firstPage: number | null; lastPage: number | null; headingPath: string[] | null }[]>`
    select c.model, c.text_hash as "textHash", c.start_offset as start, c.end_offset as "end", c.first_page as "firstPage",
           c.last_page as "lastPage", c.heading_path as "headingPath"
    from document_chunks c join documents d on d.id = c.document_id
    where c.document_id = ${documentId} and c.generation = d.chunk_generation
    order by c.index`;
  return rows.length === chunks.length && rows.every((row, i) => {
    const chunk = chunks[i]!;
    return row.model === model && row.textHash === chunk.textHash && row.start === chunk.start && row.end === chunk.end
      && row.firstPage === chunk.firstPage && row.lastPage === chunk.lastPage
      && JSON.stringify(row.headingPath) === JSON.stringify(chunk.headingPath);
  });
}

async function deleteChunksInBatches(sql: Sql, documentId: string, which: postgres.PendingQuery<postgres.Row[]>): Promise<void> {
  for (;;) {
    const deleted = await sql`
      delete from document_chunks where id in (
        select id from document_chunks where document_id = ${documentId} and ${which} limit ${DELETE_BATCH})`;
    if (deleted.count < DELETE_BATCH) return;
  }
}

function chunkRow(document: Pick<Document, 'id' | 'organizationId' | 'workspaceId'>, model: string, chunk: StoredChunk, index: number, generation: string, now: Date) {
  return {
    generation,
    id: newId('chk'),
    organization_id: document.organizationId,
    workspace_id: document.workspaceId,
    document_id: document.id,
    index,
    text: chunk.text,
    model,
    embedding: vectorLiteral(chunk.embedding),
    start_offset: chunk.start,
    end_offset: chunk.end,
    first_page: chunk.firstPage,
    last_page: chunk.lastPage,
    // postgres.js sends a JS array as a PostgreSQL array (text[] here).
    heading_path: chunk.headingPath,
    text_hash: chunk.textHash,
    created_at: now,
  };
}

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
  /** ISO 639-3, `und` when not detected, null for texts stored before detection (0014_text_search_languages.sql). */
  language: string | null;
}

export async function readIndexableText(sql: Db, documentId: string): Promise<IndexableText | null> {
  const [row] = await sql<IndexableText[]>`
    select text, page_starts as "pageStarts", headings, language from document_texts where document_id = ${documentId}`;
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
  sql: Sql,
  document: Pick<Document, 'id' | 'organizationId'>,
  extracted: {
    text: string;
    pages: number | null;
    chunks: number;
    pageStarts?: number[] | undefined;
    headings?: TextHeading[] | undefined;
    language?: string | undefined;
  },
  now: Date,
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
      insert into document_texts (document_id, organization_id, text, characters, pages, chunks, page_starts, headings, language, extracted_at)
      values (${document.id}, ${document.organizationId}, ${extracted.text}, ${characters}, ${extracted.pages}, ${extracted.chunks},
              ${pageStarts}::integer[], ${headings}, ${extracted.language ?? 'und'}, ${now})
      on conflict (document_id) do update
        set text = excluded.text, characters = excluded.characters, pages = excluded.pages, chunks = excluded.chunks,
            page_starts = excluded.page_starts, headings = excluded.headings, language = excluded.language, extracted_at = excluded.extracted_at`;
    return { text: extracted.text, characters, pages: extracted.pages };
  });
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
  /** The text with its CJK words split (documents/search-words.ts), what full text indexes; absent when the text has none. */
  searchText?: string | undefined;
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
 * Chunks per insert statement: one. A chunk costs its HNSW and GIN index entries, about 9 ms on
 * the embedded database on two busy cores (bench/chunk-storage.ts), and a request queued on its
 * one connection waits for the statement in progress: with 4 rows a statement a query's p99 while
 * 300 chunks were stored was 66-70 ms (36-43 ms p50), with 10 130-160 ms, with 50 0.5-0.8 s, and
 * with the one transaction of before 2.2-2.9 s. A statement a row costs about 15% more database
 * time than one transaction, which the writer hides behind the embedding (ChunkWriter).
 */
export const CHUNK_BATCH = 1;
/** Rows per delete statement: a delete only marks rows (the indexes are cleaned by vacuum), so more go at once. */
const DELETE_BATCH = 100;

/** A chunk as indexing places it, before its embedding. */
export type PlacedChunk = Omit<StoredChunk, 'embedding'>;

type ChunkDocument = Pick<Document, 'id' | 'organizationId' | 'workspaceId'>;

/**
 * Replaces the document's chunks with these, embedded by `model`; false when the document is gone.
 * The whole run at once: unchangedChunks, then a ChunkWriter given every chunk (tests and benches;
 * document.index writes as the embeddings arrive, jobs/embed-chunks.ts).
 */
export async function replaceChunks(
  sql: Sql,
  document: ChunkDocument,
  model: string,
  chunks: StoredChunk[],
  now: Date,
  // The job passes its document's (text-search-config.ts); `english`, search_config's default (0014), otherwise.
  searchConfig = 'english',
): Promise<boolean> {
  const config = await searchConfigOf(sql, searchConfig);
  if (await unchangedChunks(sql, document.id, model, config, chunks)) return touchIndexed(sql, document.id, chunks.length, now);
  const writer = await chunkWriter(sql, document, chunks, config, now);
  try {
    if (
      !(await writer.write(
        model,
        chunks.map((_, index) => index),
        chunks.map((chunk) => chunk.embedding),
      ))
    )
      return false;
    return await writer.finish();
  } catch (error) {
    await writer.abandon();
    throw error;
  }
}

/** A re-index of the same text: only the index's time and count change; false when the document is gone. */
export async function touchIndexed(sql: Sql, documentId: string, count: number, now: Date): Promise<boolean> {
  return sql.begin<boolean>(async (tx) => {
    if (!(await lockDocument(tx, documentId))) return false;
    await setIndexed(tx, documentId, count, now);
    return true;
  });
}

/**
 * One indexing run's writes of a document's chunks (issue 24, item 5), in short statements as
 * their embeddings arrive, so storing overlaps embedding. A document's chunks are always of one
 * model, and a reader never sees some old and some new: the run writes under a new generation,
 * CHUNK_BATCH rows per statement (each its own transaction), invisible to search (it reads
 * `generation = documents.chunk_generation`); finish() makes them the document's in one short
 * transaction (setIndexedGeneration) and deletes the old generation DELETE_BATCH rows at a time.
 * Two runs of one document at once: generations are handed out in increasing order and only a
 * newer one replaces the current, so the later run's chunks win and the earlier one deletes its
 * own; each run deletes only older generations than its own, so it never touches the rows of a
 * later run still being written. A run that fails deletes what it wrote (abandon); rows a killed
 * run left behind are older than the next run's, which deletes them.
 *
 * The long transaction this replaced held the embedded database's only connection for as long as
 * it took (the API waited up to 1.4 s; docs/benchmarks.md).
 */
export interface ChunkWriter {
  /**
   * Stores the chunks at these positions with these embeddings of `model` (every write of a run
   * names the same model). Writes run one after another in call order; false when the document
   * was deleted meanwhile.
   */
  write(model: string, indexes: readonly number[], embeddings: readonly number[][]): Promise<boolean>;
  /** Makes the written chunks the document's (every chunk must have been written); false when the document is gone. */
  finish(): Promise<boolean>;
  /** Deletes what this run wrote: it failed. Never throws. */
  abandon(): Promise<void>;
}

export async function chunkWriter(sql: Sql, document: ChunkDocument, chunks: readonly PlacedChunk[], config: string, now: Date): Promise<ChunkWriter> {
  const [row] = await sql<{ generation: string }[]>`select nextval('document_chunk_generation')::text as generation`;
  const generation = row!.generation;
  let writing: Promise<boolean> = Promise.resolve(true);
  const store = async (model: string, indexes: readonly number[], embeddings: readonly number[][]): Promise<boolean> => {
    try {
      for (let i = 0; i < indexes.length; i += CHUNK_BATCH) {
        const rows = indexes.slice(i, i + CHUNK_BATCH).map((index, offset) => chunkRow(document, model, config, { ...chunks[index]!, embedding: embeddings[i + offset]! }, index, generation, now));
        // A job's statement: on the embedded database it waits for the API's requests in flight (db/request-gate.ts).
        await sql`insert into document_chunks ${sql(rows)}`;
      }
      return true;
    } catch (error) {
      // The document was deleted meanwhile (with its chunks, this run's included).
      if (isForeignKeyViolation(error)) return false;
      throw error;
    }
  };
  return {
    write(model, indexes, embeddings) {
      const previous = writing;
      writing = previous.then((alive) => (alive ? store(model, indexes, embeddings) : false));
      return writing;
    },
    async finish() {
      if (!(await writing)) return false;
      const current = await sql.begin(async (tx) => {
        if (!(await lockDocument(tx, document.id))) return 'gone';
        return (await setIndexedGeneration(tx, document.id, generation, chunks.length, now)) ? 'current' : 'superseded';
      });
      if (current === 'gone') return false;
      // Superseded: a later run finished first; its chunks stay and this run's go.
      await deleteChunksInBatches(sql, document.id, current === 'current' ? sql`generation < ${generation}::bigint` : sql`generation = ${generation}::bigint`);
      return true;
    },
    async abandon() {
      await writing.catch(() => undefined);
      await deleteChunksInBatches(sql, document.id, sql`generation = ${generation}::bigint`).catch(() => undefined);
    },
  };
}

/**
 * The text search configuration chunks are indexed with (what unchangedChunks and chunkWriter
 * take): the configuration itself when the server has it, else `simple` (text-search-config.ts: `estonian`
 * exists on PostgreSQL 16+ only); the name as a regconfig prints it, as search_config is compared.
 */
export async function searchConfigOf(sql: Sql, name: string): Promise<string> {
  // Once per pool, name and server version: a server's configurations change only with its major
  // version, and a pool reconnects to whatever server answers at its address (an upgrade).
  const key = `${String((sql.parameters as Record<string, unknown> | undefined)?.server_version)} ${name}`;
  const known = searchConfigs.get(sql) ?? new Map<string, string>();
  searchConfigs.set(sql, known);
  const cached = known.get(key);
  if (cached !== undefined) return cached;
  const [row] = await sql<{ config: string }[]>`
    select coalesce((select c.oid::regconfig::text from pg_ts_config c where c.cfgname = ${name} limit 1), 'simple') as config`;
  known.set(key, row!.config);
  return row!.config;
}
const searchConfigs = new WeakMap<Sql, Map<string, string>>();

/**
 * Whether the document's current chunks are these already, by model, text search configuration (searchConfigOf), text hash
 * and place, in order (their embeddings follow from model and text, their search text from the text).
 */
export async function unchangedChunks(sql: Sql, documentId: string, model: string, config: string, chunks: readonly PlacedChunk[]): Promise<boolean> {
  if (chunks.length === 0) return false;
  const rows = await sql<
    { model: string; config: string; textHash: string | null; start: number | null; end: number | null; firstPage: number | null; lastPage: number | null; headingPath: string[] | null }[]
  >`
    select c.model, c.search_config::text as config, c.text_hash as "textHash", c.start_offset as start, c.end_offset as "end", c.first_page as "firstPage",
           c.last_page as "lastPage", c.heading_path as "headingPath"
    from document_chunks c join documents d on d.id = c.document_id
    where c.document_id = ${documentId} and c.generation = d.chunk_generation
    order by c.index`;
  return (
    rows.length === chunks.length &&
    rows.every((row, i) => {
      const chunk = chunks[i]!;
      return (
        row.model === model &&
        row.config === config &&
        row.textHash === chunk.textHash &&
        row.start === chunk.start &&
        row.end === chunk.end &&
        row.firstPage === chunk.firstPage &&
        row.lastPage === chunk.lastPage &&
        JSON.stringify(row.headingPath) === JSON.stringify(chunk.headingPath)
      );
    })
  );
}

async function deleteChunksInBatches(sql: Sql, documentId: string, which: postgres.PendingQuery<postgres.Row[]>): Promise<void> {
  for (;;) {
    const deleted = await sql`
      delete from document_chunks where id in (
        select id from document_chunks where document_id = ${documentId} and ${which} limit ${DELETE_BATCH})`;
    if (deleted.count < DELETE_BATCH) return;
  }
}

function chunkRow(document: ChunkDocument, model: string, config: string, chunk: StoredChunk, index: number, generation: string, now: Date) {
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
    search_config: config,
    search_text: chunk.searchText ?? null,
    created_at: now,
  };
}

/** Chunks of every document, for a background migration's progress (jobs/background-migrations.ts). */
export async function countChunks(sql: Db): Promise<number> {
  const [row] = await sql<{ count: number }[]>`select count(*)::float8 as count from document_chunks`;
  return row!.count;
}

/**
 * One batch of the background migration `chunk-text-hashes`: the chunks after `after` in id order
 * (at most `limit`), with the text hash that chunks stored before sql/0013 lack filled in, as
 * textHash (jobs/embed-chunks.ts) computes it: sha256 of the UTF-8 text, in hex. A re-index then
 * reuses their embeddings instead of paying the AI service again. Answers the last id visited
 * (null: none was left) and how many were visited.
 */
export async function fillChunkTextHashes(tx: Db, after: string | null, limit: number): Promise<{ last: string | null; visited: number }> {
  const [row] = await tx<{ last: string | null; visited: number }[]>`
    with batch as (
      select id from document_chunks where id > ${after ?? ''} order by id limit ${limit}
    ), filled as (
      update document_chunks c set text_hash = encode(sha256(convert_to(c.text, 'UTF8')), 'hex')
      from batch where c.id = batch.id and c.text_hash is null
      returning 1
    )
    select (select max(id) from batch) as last, (select count(*) from batch)::int as visited, (select count(*) from filled)::int as filled`;
  return { last: row!.last, visited: row!.visited };
}

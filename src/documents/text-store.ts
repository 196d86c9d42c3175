/**
 * SQL of what the jobs learn about a document: its extracted text (documents.text) and its
 * embedded chunks (documents.search). Writers answer null when the document was deleted meanwhile.
 */
import type { components } from '../../generated/types.ts';
import type { Sql } from '../db/connection.ts';
import type { Document } from './store.ts';
import { newId } from '../ids.ts';

export interface DocumentText {
  text: string;
  characters: number;
  pages: number | null;
}

export async function readDocumentText(sql: Sql, documentId: string): Promise<DocumentText | null> {
  const [row] = await sql<DocumentText[]>`select text, characters, pages from document_texts where document_id = ${documentId}`;
  return row ?? null;
}

/** Stores the text of an extraction and the document's `extracted` summary. */
export async function saveDocumentText(sql: Sql, document: Pick<Document, 'id' | 'organizationId'>, extracted: { text: string; pages: number | null }, now: Date): Promise<DocumentText | null> {
  // Characters as a reader counts them (code points), not UTF-16 units.
  const characters = [...extracted.text].length;
  return sql.begin(async (tx) => {
    const [updated] = await tx`
      update documents set extracted_characters = ${characters}, extracted_pages = ${extracted.pages}, extracted_at = ${now}, updated_at = ${now}
      where id = ${document.id} returning id`;
    if (!updated) return null;
    await tx`
      insert into document_texts (document_id, organization_id, text, characters, pages, extracted_at)
      values (${document.id}, ${document.organizationId}, ${extracted.text}, ${characters}, ${extracted.pages}, ${now})
      on conflict (document_id) do update set text = excluded.text, characters = excluded.characters, pages = excluded.pages, extracted_at = excluded.extracted_at`;
    return { text: extracted.text, characters, pages: extracted.pages };
  }) as Promise<DocumentText | null>;
}

/** pgvector's text form of a vector. */
export function vectorLiteral(vector: readonly number[]): string {
  return `[${vector.join(',')}]`;
}

/** Replaces the document's chunks with these, in one transaction; false when the document is gone. */
export async function replaceChunks(sql: Sql, document: Pick<Document, 'id' | 'organizationId' | 'workspaceId'>, chunks: { text: string; embedding: number[] }[], now: Date): Promise<boolean> {
  return sql.begin(async (tx) => {
    // The document row first: it serialises two indexings of one document, and tells whether it still exists.
    const [current] = await tx`select id from documents where id = ${document.id} for update`;
    if (!current) return false;
    await tx`delete from document_chunks where document_id = ${document.id}`;
    const BATCH = 200;
    for (let i = 0; i < chunks.length; i += BATCH) {
      const rows = chunks.slice(i, i + BATCH).map((chunk, offset) => ({
        id: newId('chk'),
        organization_id: document.organizationId,
        workspace_id: document.workspaceId,
        document_id: document.id,
        index: i + offset,
        text: chunk.text,
        embedding: vectorLiteral(chunk.embedding),
        created_at: now,
      }));
      await tx`insert into document_chunks ${tx(rows)}`;
    }
    await tx`update documents set indexed_at = ${now}, chunk_count = ${chunks.length}, updated_at = ${now} where id = ${document.id}`;
    return true;
  }) as Promise<boolean>;
}

/** The contract's search hit. */
export type SearchHit = components['schemas']['SearchHit'];

/**
 * The workspace's chunks nearest to `query` by cosine distance, best first. The HNSW index serves
 * the ordering; with the workspace filter, pgvector's iterative scan keeps going until it has
 * `limit` matches (relaxed order, so the outer query sorts again).
 */
export async function searchChunks(sql: Sql, workspaceId: string, query: number[], limit: number): Promise<SearchHit[]> {
  return sql.begin(async (tx) => {
    // ef_search 160: recall@10 about 0.99 at no measurable cost (bench/search.ts; 40 gave 0.89).
    // Custom plans: after five runs PostgreSQL may switch a prepared statement to its generic plan,
    // which (on PGlite always, on a server for small workspaces) sorts the whole workspace instead
    // of walking the index.
    await tx`
      select set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', ${String(Math.max(160, limit * 4))}, true),
             set_config('plan_cache_mode', 'force_custom_plan', true)`;
    return tx<SearchHit[]>`
      select nearest.id as "chunkId", nearest.document_id as "documentId", d.name as "documentName", nearest.index,
             nearest.text, (1 - nearest.distance)::float8 as score
      from (
        select id, document_id, index, text, embedding <=> ${vectorLiteral(query)}::vector as distance
        from document_chunks
        where workspace_id = ${workspaceId}
        order by embedding <=> ${vectorLiteral(query)}::vector
        limit ${limit}
      ) nearest
      join documents d on d.id = nearest.document_id
      order by nearest.distance, nearest.id`;
  }) as Promise<SearchHit[]>;
}

/**
 * SQL of what the jobs learn about a document: its extracted text (documents.text) and its
 * embedded chunks (searched in chunk-search.ts). Writers answer null when the document was deleted meanwhile.
 */
import type { Sql } from '../db/connection.ts';
import type { Db } from '../db/db.ts';
import { organizationUsage, type Document } from './store.ts';
import { newId } from '../ids.ts';

export interface DocumentText {
  text: string;
  characters: number;
  pages: number | null;
}

export async function readDocumentText(sql: Db, documentId: string): Promise<DocumentText | null> {
  const [row] = await sql<DocumentText[]>`select text, characters, pages from document_texts where document_id = ${documentId}`;
  return row ?? null;
}

/**
 * Stores the text of an extraction and the document's `extracted` summary. The text's UTF-8 bytes
 * count toward the organization's storage (`documents.text_bytes`): with a limit, the
 * organization's row is locked first (the order completeDocument takes) and a text that would take
 * the organization past it is not stored ('limit'). null when the document was deleted meanwhile.
 */
/** How many chunks the document's stored text makes, or null when it has none (pricing.ts). */
export async function readChunkCount(sql: Db, documentId: string): Promise<number | null> {
  const [row] = await sql<{ chunks: number }[]>`select chunks from document_texts where document_id = ${documentId}`;
  return row?.chunks ?? null;
}

export async function saveDocumentText(
  sql: Sql, document: Pick<Document, 'id' | 'organizationId'>, extracted: { text: string; pages: number | null; chunks: number }, now: Date,
  limitBytes: number | null = null,
): Promise<DocumentText | 'limit' | null> {
  // Characters as a reader counts them (code points), not UTF-16 units.
  const characters = [...extracted.text].length;
  const bytes = Buffer.byteLength(extracted.text, 'utf8');
  return sql.begin(async (tx) => {
    if (limitBytes !== null) {
      await tx`select id from organizations where id = ${document.organizationId} for no key update`;
      const [current] = await tx<{ textBytes: string }[]>`select text_bytes::text as "textBytes" from documents where id = ${document.id} for no key update`;
      if (!current) return null;
      if ((await organizationUsage(tx, document.organizationId)) - Number(current.textBytes) + bytes > limitBytes) return 'limit';
    }
    const [updated] = await tx`
      update documents set extracted_characters = ${characters}, extracted_pages = ${extracted.pages}, extracted_at = ${now},
                           text_bytes = ${bytes}, updated_at = ${now}
      where id = ${document.id} returning id`;
    if (!updated) return null;
    await tx`
      insert into document_texts (document_id, organization_id, text, characters, pages, chunks, extracted_at)
      values (${document.id}, ${document.organizationId}, ${extracted.text}, ${characters}, ${extracted.pages}, ${extracted.chunks}, ${now})
      on conflict (document_id) do update
        set text = excluded.text, characters = excluded.characters, pages = excluded.pages, chunks = excluded.chunks, extracted_at = excluded.extracted_at`;
    return { text: extracted.text, characters, pages: extracted.pages };
  }) as Promise<DocumentText | 'limit' | null>;
}

/** pgvector's text form of a vector. */
export function vectorLiteral(vector: readonly number[]): string {
  return `[${vector.join(',')}]`;
}

/**
 * Replaces the document's chunks with these, embedded by `model`, in one transaction; false when
 * the document is gone. A document's chunks are always of one model.
 */
export async function replaceChunks(
  sql: Sql, document: Pick<Document, 'id' | 'organizationId' | 'workspaceId'>, model: string, chunks: { text: string; embedding: number[] }[], now: Date,
): Promise<boolean> {
  return sql.begin(async (tx) => {
    // The document row first: it serialises two indexings of one document, and tells whether it still exists.
    const [current] = await tx`select id from documents where id = ${document.id} for no key update`;
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
        model,
        embedding: vectorLiteral(chunk.embedding),
        created_at: now,
      }));
      await tx`insert into document_chunks ${tx(rows)}`;
    }
    await tx`update documents set indexed_at = ${now}, chunk_count = ${chunks.length}, updated_at = ${now} where id = ${document.id}`;
    return true;
  }) as Promise<boolean>;
}

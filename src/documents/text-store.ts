/**
 * SQL of what the jobs learn about a document: its extracted text (document_texts, documents.text)
 * and its embedded chunks (document_chunks, searched in chunk-search.ts); the only module that
 * writes those two tables. What the document row records of them (`extracted`, `indexedAt`) is
 * written through store.ts. Writers answer null when the document was deleted meanwhile.
 */
import type { Sql } from '../db/connection.ts';
import type { Db } from '../db/db.ts';
import { lockOrganization } from '../organizations/store.ts';
import { lockDocument, organizationUsage, setExtracted, setIndexed, type Document } from './store.ts';
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
  sql: Sql, document: Pick<Document, 'id' | 'organizationId'>, extracted: { text: string; pages: number | null; chunks: number }, now: Date,
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
    if (!(await lockDocument(tx, document.id))) return false;
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
    await setIndexed(tx, document.id, chunks.length, now);
    return true;
  }) as Promise<boolean>;
}

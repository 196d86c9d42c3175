/** SQL of the documents group. Rows come back in the contract's Document shape. */
import type { Sql } from '../db/connection.ts';
import type { CursorPosition } from '../pagination/cursor.ts';
import type { components } from '../../generated/types.ts';
import type { Resource } from '../db/resource.ts';
import type { Db } from '../db/db.ts';
import { storageKey } from '../storage/driver.ts';
import { lockOrganization } from '../organizations/store.ts';

/** The contract's Document (date-time fields are Dates, see codegen/types.ts). */
export type Document = components['schemas']['Document'];

interface DocumentRow extends Omit<Document, 'extracted' | 'size'> {
  // postgres.js returns bigint as text: sizes may pass 2^31.
  size: string;
  extractedCharacters: number | null;
  extractedPages: number | null;
  extractedAt: Date | null;
  /** created_at::text, exact to the microsecond, for cursors. */
  cursorAt: string;
}

// A constant list, so `unsafe` injects nothing from outside.
const COLUMNS = `id, organization_id as "organizationId", workspace_id as "workspaceId", uploaded_by as "uploadedBy", name,
  content_type as "contentType", size::text as size, status, extracted_characters as "extractedCharacters",
  extracted_pages as "extractedPages", extracted_at as "extractedAt", indexed_at as "indexedAt", chunk_count as "chunkCount",
  created_at as "createdAt", updated_at as "updatedAt", created_at::text as "cursorAt"`;

function toDocument(row: DocumentRow): Document & { cursorAt: string } {
  const { extractedCharacters, extractedPages, extractedAt, size, ...rest } = row;
  return {
    ...rest,
    size: Number(size),
    extracted: extractedAt === null ? null : { characters: extractedCharacters ?? 0, pages: extractedPages, at: extractedAt },
  };
}

/** The contract's Document (without the cursor helper column). */
export function publicDocument(document: Document & { cursorAt?: string }): Document {
  const { cursorAt: _cursor, ...rest } = document;
  return rest;
}

export async function findDocument(sql: Sql, id: string): Promise<(Document & { cursorAt: string }) | null> {
  const [row] = await sql<DocumentRow[]>`select ${sql.unsafe(COLUMNS)} from documents where id = ${id}`;
  return row ? toDocument(row) : null;
}

/** The loader of `resource: document` operations (src/composition/resources.ts): the contract's Document. */
export const documentResource: Resource<Document> = {
  load: async (sql, id) => {
    const document = await findDocument(sql, id);
    return document && publicDocument(document);
  },
  organizationOf: (document) => document.organizationId,
  notFound: 'Document not found.',
};

/** Newest first by (created_at, id); one row more than the page tells whether another page exists. */
export async function pageDocuments(sql: Sql, workspaceId: string, limit: number, after: CursorPosition | null) {
  const rows = await sql<DocumentRow[]>`
    select ${sql.unsafe(COLUMNS)} from documents
    where workspace_id = ${workspaceId}
      ${after ? sql`and (created_at, id) < (${after.at}::timestamptz, ${after.id})` : sql``}
    order by created_at desc, id desc
    limit ${limit + 1}`;
  const documents = rows.map(toDocument);
  return { items: documents.slice(0, limit), last: documents.length > limit ? documents[limit - 1]! : null };
}

export async function organizationUsage(sql: Db, organizationId: string): Promise<number> {
  const [row] = await sql<{ used: string }[]>`select coalesce(sum(size + text_bytes), 0)::text as used from documents where organization_id = ${organizationId}`;
  return Number(row!.used);
}

/** Why a write did not happen: the plan's storage limit, or a row it depends on is gone. */
export type Refusal = 'limit' | 'gone';

/**
 * Inserts a pending document unless it would take the organization over `limitBytes`. The
 * organization row is locked for the check, so concurrent uploads cannot both fit in the last
 * free bytes. Answers 'limit' when the limit stopped it, 'gone' when the workspace (or its
 * organization) was deleted since the caller looked it up.
 */
export async function insertDocument(
  sql: Sql,
  row: Pick<Document, 'id' | 'organizationId' | 'workspaceId' | 'uploadedBy' | 'name' | 'contentType' | 'size'> & { now: Date; limitBytes: number | null },
): Promise<Document | Refusal> {
  try {
    return await sql.begin<Document | Refusal>(async (tx) => {
      if (row.limitBytes !== null) {
        await lockOrganization(tx, row.organizationId);
        if ((await organizationUsage(tx, row.organizationId)) + row.size > row.limitBytes) return 'limit';
      }
      const [created] = await tx<DocumentRow[]>`
        insert into documents (id, organization_id, workspace_id, uploaded_by, name, content_type, size, status, created_at, updated_at)
        values (${row.id}, ${row.organizationId}, ${row.workspaceId}, ${row.uploadedBy}, ${row.name}, ${row.contentType}, ${row.size}, 'pending', ${row.now}, ${row.now})
        returning ${tx.unsafe(COLUMNS)}`;
      return publicDocument(toDocument(created!));
    });
  } catch (error) {
    if (isForeignKeyViolation(error)) return 'gone';
    throw error;
  }
}

/**
 * Marks a document ready with the measured size, re-checking the quota against it under the
 * organization lock. Answers 'limit' when the real size takes the organization over its limit,
 * 'gone' when the document was deleted meanwhile.
 */
export async function completeDocument(sql: Sql, document: Document, size: number, now: Date, limitBytes: number | null): Promise<Document | Refusal> {
  return sql.begin(async (tx) => {
    // Organization first, then the document: the order insertDocument takes its lock in.
    if (limitBytes !== null) await lockOrganization(tx, document.organizationId);
    const [current] = await tx<{ size: string }[]>`select size::text as size from documents where id = ${document.id} for no key update`;
    if (!current) return 'gone';
    if (limitBytes !== null) {
      const others = (await organizationUsage(tx, document.organizationId)) - Number(current.size);
      if (others + size > limitBytes) return 'limit';
    }
    const [row] = await tx<DocumentRow[]>`
      update documents set size = ${size}, status = 'ready', updated_at = ${now}
      where id = ${document.id} returning ${tx.unsafe(COLUMNS)}`;
    return publicDocument(toDocument(row!));
  });
}

/**
 * Locks the document's row (`for no key update`) until `tx` ends: it serialises the writers of one
 * document's text and chunks (text-store.ts). Answers the bytes it counts toward storage, or null
 * when the document is gone.
 */
export async function lockDocument(tx: Db, id: string): Promise<{ size: number; textBytes: number } | null> {
  const [row] = await tx<{ size: string; textBytes: string }[]>`
    select size::text as size, text_bytes::text as "textBytes" from documents where id = ${id} for no key update`;
  return row ? { size: Number(row.size), textBytes: Number(row.textBytes) } : null;
}

/**
 * Records an extraction's summary on the document (`extracted`) and the UTF-8 bytes of its text,
 * which count toward the organization's storage; false when the document is gone.
 */
export async function setExtracted(tx: Db, id: string, extracted: { characters: number; pages: number | null; textBytes: number }, now: Date): Promise<boolean> {
  const [updated] = await tx`
    update documents set extracted_characters = ${extracted.characters}, extracted_pages = ${extracted.pages}, extracted_at = ${now},
                         text_bytes = ${extracted.textBytes}, updated_at = ${now}
    where id = ${id} returning id`;
  return updated !== undefined;
}

/** Records that the document's chunks were (re)placed: `indexedAt` and `chunkCount`. */
export async function setIndexed(tx: Db, id: string, chunkCount: number, now: Date): Promise<void> {
  await tx`update documents set indexed_at = ${now}, chunk_count = ${chunkCount}, updated_at = ${now} where id = ${id}`;
}

/**
 * Makes `generation` the document's chunks (text-store.ts, replaceChunks) and records the index,
 * unless the document already has a newer generation (a later run of its indexing finished
 * first); false then, or when the document is gone.
 */
export async function setIndexedGeneration(tx: Db, id: string, generation: string, chunkCount: number, now: Date): Promise<boolean> {
  const rows = await tx`
    update documents set chunk_generation = ${generation}::bigint, indexed_at = ${now}, chunk_count = ${chunkCount}, updated_at = ${now}
    where id = ${id} and chunk_generation < ${generation}::bigint
    returning id`;
  return rows.length > 0;
}

export { isForeignKeyViolation };

export async function deleteDocument(sql: Sql, id: string): Promise<void> {
  await sql`delete from documents where id = ${id}`;
}

/** How long an upload address lives (decisions.md); a document still pending long after is abandoned (jobs/housekeeping.ts). */
export const UPLOAD_URL_SECONDS = 15 * 60;

/**
 * Deletes documents still pending `graceMs` after their upload address expired; answers their
 * storage keys, for the bytes (or staged upload) that may have arrived.
 */
export async function deleteAbandonedUploads(sql: Sql, now: Date, graceMs: number): Promise<string[]> {
  const before = new Date(now.getTime() - UPLOAD_URL_SECONDS * 1000 - graceMs);
  const rows = await sql<{ organizationId: string; id: string }[]>`
    delete from documents where status = 'pending' and created_at < ${before}
    returning organization_id as "organizationId", id`;
  return rows.map(objectKey);
}

export function objectKey(document: Pick<Document, 'organizationId' | 'id'>): string {
  return storageKey(document.organizationId, document.id);
}

/** What the local driver's /uploads route needs to know of a document: name, type and state. */
export async function describeDocument(sql: Sql, organizationId: string, id: string): Promise<{ name: string; contentType: string; status: 'pending' | 'ready' } | null> {
  const [row] = await sql<{ name: string; contentType: string; status: 'pending' | 'ready' }[]>`
    select name, content_type as "contentType", status from documents where id = ${id} and organization_id = ${organizationId}`;
  return row ?? null;
}

function isForeignKeyViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === '23503';
}

/**
 * documents.list, get, createUpload, complete, downloadUrl, text, delete. Bytes never pass through
 * the API: createUpload answers a presigned PUT, complete measures what arrived with the driver.
 * documents.search is in search.ts.
 */
import type { Context, Handlers } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import { newId } from '../ids.ts';
import { deleteObjectsBestEffort, objectDeletion } from '../storage/delete-objects.ts';
import { refuseWhenStorageDown } from '../storage/unavailable.ts';
import { decodeCursor, encodeCursor } from '../pagination/cursor.ts';
import { findWorkspace, workspaceUsage } from '../workspaces/store.ts';
import * as store from './store.ts';
import { UPLOAD_URL_SECONDS } from './store.ts';
import { search } from './search.ts';
import { readDocumentText } from './text-store.ts';
import { checkRange, textRange } from './text-range.ts';

const DOWNLOAD_URL_SECONDS = 5 * 60;

/** The workspace must belong to the organization the caller was authorized for. */
async function workspaceIn(ctx: Context<unknown>, workspaceId: string, organizationId: string) {
  const workspace = await findWorkspace(ctx.services.db.sql, workspaceId);
  if (!workspace || workspace.organizationId !== organizationId) throw new ApiError('NOT_FOUND', { message: 'Workspace not found.' });
  return workspace;
}

// Typed with its code: `make lint` checks the codes a handler throws against its contract.
function storageLimitReached(plan: { plan: string; limits: { storageBytes: number } }): ApiError<'LIMIT_REACHED'> {
  return new ApiError('LIMIT_REACHED', {
    message: `Your plan allows ${plan.limits.storageBytes} bytes of storage.`,
    data: { kind: 'storageBytes', limit: plan.limits.storageBytes, plan: plan.plan },
  });
}

export const documentProcedures = {
  'documents.list': async (input, ctx) => {
    const { sql } = ctx.services.db;
    const workspace = await workspaceIn(ctx, input.workspaceId, input.organizationId);
    const after = input.cursor ? decodeCursor(ctx.services.secret, input.cursor, workspace.id) : null;
    const page = await store.pageDocuments(sql, workspace.id, input.limit ?? 50, after);
    const plan = await ctx.services.plans.limitsFor(workspace.organizationId);
    return {
      items: page.items.map(store.publicDocument),
      nextCursor: page.last ? encodeCursor(ctx.services.secret, { at: page.last.cursorAt, id: page.last.id }, workspace.id) : null,
      storage: { usedBytes: await workspaceUsage(sql, workspace.id), limitBytes: plan?.limits.storageBytes ?? null },
    };
  },

  'documents.get': (_input, ctx) => ctx.row,

  'documents.createUpload': async (input, ctx) => {
    const { storage, config } = ctx.services;
    const workspace = await workspaceIn(ctx, input.workspaceId, input.organizationId);
    if (input.size > config.maxUploadBytes) {
      throw new ApiError('PAYLOAD_TOO_LARGE', { message: `The file is larger than ${config.maxUploadBytes} bytes.`, data: { maxBytes: config.maxUploadBytes } });
    }
    const plan = await ctx.services.plans.limitsFor(workspace.organizationId);
    const now = ctx.services.now();
    const id = newId('doc');
    // Signed before the row exists: a storage that cannot sign answers 503 with nothing written, so
    // the same call (and its Idempotency-Key) can simply be made again, and no pending document
    // holds the plan's storage until housekeeping sweeps it.
    const upload = await storage
      .presignUpload(store.objectKey({ organizationId: workspace.organizationId, id }), { contentType: input.contentType, size: input.size, expiresInSeconds: UPLOAD_URL_SECONDS, now })
      .catch(refuseWhenStorageDown(ctx.log));
    const document = await store.insertDocument(ctx.services.db.sql, {
      id,
      organizationId: workspace.organizationId,
      workspaceId: workspace.id,
      uploadedBy: ctx.principal?.userId ?? null,
      name: input.name,
      contentType: input.contentType,
      size: input.size,
      now,
      limitBytes: plan?.limits.storageBytes ?? null,
    });
    if (document === 'gone') throw new ApiError('NOT_FOUND', { message: 'Workspace not found.' });
    if (document === 'limit') throw storageLimitReached(plan!);
    return { document, upload: { method: 'PUT' as const, ...upload } };
  },

  'documents.complete': async (_input, ctx) => {
    const document = ctx.row;
    if (document.status === 'ready') return document;
    const { storage, config } = ctx.services;
    const key = store.objectKey(document);
    // Moves the uploaded bytes into place (from a staging key nothing else reads) and measures them.
    // Storage down: 503, the document stays pending, and complete can be called again (the commit
    // is idempotent).
    const stored = await storage.commitUpload(key).catch(refuseWhenStorageDown(ctx.log));
    if (!stored) throw new ApiError('PRECONDITION_FAILED', { message: 'The upload has not arrived yet.' });
    // The declared size, capped by MAX_UPLOAD_BYTES (which may have gone down since createUpload).
    const maxBytes = Math.min(document.size, config.maxUploadBytes);
    if (stored.size > maxBytes) {
      await storage.delete(key).catch(refuseWhenStorageDown(ctx.log));
      throw new ApiError('PAYLOAD_TOO_LARGE', {
        message: `The stored file (${stored.size} bytes) is larger than the ${maxBytes} bytes allowed; it was deleted.`,
        data: { maxBytes },
      });
    }
    const plan = await ctx.services.plans.limitsFor(document.organizationId);
    const completed = await store.completeDocument(ctx.services.db.sql, document, stored.size, ctx.services.now(), plan?.limits.storageBytes ?? null);
    if (completed === 'gone') {
      // Deleted while its bytes were being committed: they would be stored for nothing.
      await deleteObjectsBestEffort(storage, [key], ctx.log, { documentId: document.id });
      throw new ApiError('NOT_FOUND', { message: 'Document not found.' });
    }
    if (completed === 'limit') throw storageLimitReached(plan!);
    return completed;
  },

  'documents.downloadUrl': async (_input, ctx) => {
    const document = ctx.row;
    if (document.status !== 'ready') throw new ApiError('PRECONDITION_FAILED', { message: 'The upload is not complete yet.' });
    return ctx.services.storage.presignDownload(store.objectKey(document), {
      filename: document.name,
      contentType: document.contentType,
      expiresInSeconds: DOWNLOAD_URL_SECONDS,
      now: ctx.services.now(),
    });
  },

  // Text exists once a document.extract (or document.index) job has succeeded; null before.
  'documents.text': async (input, ctx) => {
    checkRange(input.start, input.end);
    const text = await readDocumentText(ctx.services.db.sql, ctx.row.id);
    if (!text || (input.start === undefined && input.end === undefined)) return text;
    return textRange(text, input.start, input.end);
  },

  'documents.search': search,

  'documents.delete': async (_input, ctx) => {
    const document = ctx.row;
    const keys = [store.objectKey(document)];
    // Its bytes first (as workspaces.delete): while the storage is down this answers 503 and the
    // document stays for a retry. Then the row, and the bytes again for a complete that committed meanwhile.
    const objects = objectDeletion(ctx.services.storage, ctx.log, { documentId: document.id });
    await objects.beforeRows(keys);
    await store.deleteDocument(ctx.services.db.sql, document.id);
    await objects.afterRows(keys);
    return { id: document.id };
  },
} satisfies Handlers;

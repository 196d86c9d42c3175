/**
 * PUT, GET and HEAD /uploads/:organizationId/:documentId: the local driver's stand-in for a
 * bucket (specification, "Other routes"). Mounted only with the local driver. No session: the
 * signed query string from documents.createUpload or documents.downloadUrl is the authorization.
 *
 * PUT streams the body into a temp file beside the target and renames it into place only when
 * exactly Content-Length bytes arrived and the client is still there to be told; the body is never
 * held in memory. Errors answer `{ error, message, requestId }` like the other transport-level
 * refusals: 403 invalid_signature (a PUT's Content-Type is part of the signature), 404 not_found,
 * 405 method_not_allowed, 411 length_required, 413 too_large.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import express, { type Request, type Response, type Router } from 'express';
import { contentDisposition } from './content-disposition.ts';
import { isKeySegment, storageKey } from './driver.ts';
import { isMissing, type LocalDriver } from './local-driver.ts';
import { verifySignedQuery } from './signed-url.ts';

export interface UploadRoutesOptions {
  driver: LocalDriver;
  secret: string;
  maxUploadBytes: number;
  now: () => Date;
  /** The document's name, content type and state; null when there is no such document. */
  describe(organizationId: string, documentId: string): Promise<{ name: string; contentType: string; status: 'pending' | 'ready' } | null>;
}

export const UPLOAD_ROUTE = '/uploads/:organizationId/:documentId';
const ALLOWED = 'GET, HEAD, PUT';
/** Bytes the file stream may buffer while a write is in flight: lets the socket keep reading meanwhile. */
const WRITE_BUFFER = 1024 * 1024;

/**
 * More bytes arrived than Content-Length declared. Node's HTTP parser ends a body at its
 * Content-Length (anything after it is parsed as the next request, which Node answers 400 before
 * closing), so this is a guard for other framings: it cuts the connection and keeps nothing.
 */
class BodyTooLong extends Error {}

export function uploadRoutes(options: UploadRoutesOptions): Router {
  const { driver, secret, maxUploadBytes, now, describe } = options;
  const router = express.Router();

  /** The key's parts when both are ids and the signature fits this method and path; otherwise it answered. */
  function authorize(req: Request, res: Response): { organizationId: string; documentId: string; size: number | undefined } | null {
    const organizationId = String(req.params.organizationId);
    const documentId = String(req.params.documentId);
    if (!isKeySegment(organizationId) || !isKeySegment(documentId)) {
      fail(req, res, 404, 'not_found', 'No such upload.');
      return null;
    }
    const query = new URL(req.originalUrl, 'http://localhost').searchParams;
    const path = `/uploads/${organizationId}/${documentId}`;
    // A PUT's Content-Type is signed too (S3 signs it in its presigned PUTs and refuses any other).
    const contentType = req.method === 'PUT' ? (req.headers['content-type'] ?? '') : undefined;
    const verdict = verifySignedQuery(secret, { method: req.method, path, query, now: now(), contentType });
    if (!verdict.ok) {
      req.log.info({ reason: verdict.reason, path, ...(contentType === undefined ? {} : { contentType }) }, 'signed upload address refused');
      fail(req, res, 403, 'invalid_signature', refusal(verdict.reason, req.method));
      return null;
    }
    return { organizationId, documentId, size: verdict.size };
  }

  router.put(UPLOAD_ROUTE, async (req, res) => {
    const allowed = authorize(req, res);
    if (!allowed) return;
    const length = req.headers['content-length'];
    // A chunked body has no length to check up front; Transfer-Encoding with Content-Length is refused too.
    if (req.headers['transfer-encoding'] !== undefined || length === undefined) {
      fail(req, res, 411, 'length_required', 'Send the body with a Content-Length header; chunked bodies are not accepted.');
      return;
    }
    if (!/^\d{1,16}$/.test(length)) {
      fail(req, res, 400, 'bad_request', 'Content-Length must be a byte count.');
      return;
    }
    const declared = Number(length);
    // An upload address outlives its document's pending state: once the document is deleted or
    // complete, its bytes are settled and the address may not change them.
    const document = await describe(allowed.organizationId, allowed.documentId);
    if (document?.status !== 'pending') {
      fail(req, res, 404, 'not_found', 'No upload is pending for this document.');
      return;
    }
    const limit = Math.min(maxUploadBytes, allowed.size!);
    if (declared > limit) {
      fail(req, res, 413, 'too_large', `The body may be at most ${limit} bytes; Content-Length says ${declared}.`);
      return;
    }

    // Into the staging path: documents.complete moves it into place (commitUpload), so a PUT that
    // races past the pending check above can never replace the bytes of a ready document.
    const target = driver.uploadPath(storageKey(allowed.organizationId, allowed.documentId));
    await mkdir(dirname(target), { recursive: true });
    // Beside the target (same file system, so the rename is atomic); the dot keeps it from ever looking like a key.
    const temp = join(dirname(target), `.${allowed.documentId}.${randomUUID()}.part`);
    // Counted beside the pipe rather than in a Transform: one stream hop less per chunk.
    let received = 0;
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > declared) req.destroy(new BodyTooLong());
    });
    try {
      await pipeline(req, createWriteStream(temp, { flags: 'wx', highWaterMark: WRITE_BUFFER }));
      // The parser ends a body at Content-Length, so fewer bytes mean the stream was cut short; a
      // dead socket means the client cannot learn of success (e.g. Node answered 400 to bytes
      // sent past the body), so the upload does not count either.
      if (received !== declared || req.socket.destroyed) throw new Error(`upload cut short: ${received} of ${declared} bytes`);
      await rename(temp, target);
    } catch (error) {
      await rm(temp, { force: true });
      if (error instanceof BodyTooLong) {
        req.log.warn({ declared, received }, 'upload longer than its Content-Length; nothing kept');
        // Destroying the request took the socket with it; this reaches the client only if it did not.
        if (!res.destroyed) fail(req, res, 413, 'too_large', `More than the declared ${declared} bytes arrived.`);
        return;
      }
      if (req.socket.destroyed || res.destroyed) {
        req.log.info({ declared, received, err: error }, 'upload aborted by the client; nothing kept');
        return;
      }
      throw error;
    }
    // No body and no ETag (app.ts turns ETags off; end() never makes one anyway).
    res.status(200).end();
  });

  const download = async (req: Request, res: Response): Promise<void> => {
    const allowed = authorize(req, res);
    if (!allowed) return;
    const described = await describe(allowed.organizationId, allowed.documentId);
    // A pending upload may still be larger than declared: nothing is served before complete.
    if (described?.status !== 'ready') {
      fail(req, res, 404, 'not_found', 'No such document.');
      return;
    }
    let handle: FileHandle;
    try {
      handle = await open(driver.filePath(storageKey(allowed.organizationId, allowed.documentId)), 'r');
    } catch (error) {
      if (!isMissing(error)) throw error;
      fail(req, res, 404, 'not_found', 'The document has not been uploaded.');
      return;
    }
    let streaming = false;
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) {
        fail(req, res, 404, 'not_found', 'The document has not been uploaded.');
        return;
      }
      res.status(200);
      res.setHeader('Content-Type', described.contentType);
      res.setHeader('Content-Length', String(stats.size));
      res.setHeader('Content-Disposition', contentDisposition(described.name));
      res.setHeader('X-Content-Type-Options', 'nosniff');
      if (req.method === 'HEAD') {
        res.end();
        return;
      }
      streaming = true;
      // autoClose: the stream closes the handle when it ends or is destroyed.
      await pipeline(handle.createReadStream({ autoClose: true }), res).catch((error: unknown) => {
        // The client went away mid-download: nothing to answer.
        if (res.destroyed || req.socket.destroyed) req.log.info({ err: error }, 'download aborted by the client');
        else throw error;
      });
    } finally {
      if (!streaming) await handle.close();
    }
  };
  router.head(UPLOAD_ROUTE, download);
  router.get(UPLOAD_ROUTE, download);

  router.all(UPLOAD_ROUTE, (req, res) => {
    fail(req, res, 405, 'method_not_allowed', `${req.method} is not allowed here.`, { Allow: ALLOWED });
  });
  return router;
}

function refusal(reason: 'malformed' | 'mismatch' | 'expired', method: string): string {
  if (reason === 'expired') return 'The signed address has expired.';
  if (method === 'PUT' && reason === 'mismatch') return 'The signed address is not valid for this request: send the PUT with exactly the headers of upload.headers (Content-Type included).';
  return 'The signed address is not valid for this request.';
}

function fail(req: Request, res: Response, status: number, error: string, message: string, headers: Record<string, string> = {}): void {
  // A refused upload's body is not read: the connection closes after the answer. In the app,
  // src/http/lingering-close.ts first discards what the client is still sending (within a bound),
  // so that the client can read the answer; alone, this router closes at once.
  if (!req.complete) res.setHeader('Connection', 'close');
  res.locals.errorCode = error; // for the access-log line
  res.status(status).set(headers).json({ error, message, requestId: req.id });
}

/**
 * Signed query strings of the local driver's /uploads routes (decisions.md, "Documents and
 * storage"): `expires` (unix seconds), `size` (uploads only: the declared byte count) and
 * `signature`, the hex HMAC-SHA256 with the server secret over the method, the path, expires and
 * size, and for uploads the Content-Type header the PUT must send. The method is signed, so a
 * download address cannot upload and an upload address cannot download; the path is signed, so an
 * address works for its own document only; the Content-Type is signed (not carried in the query:
 * the client sends it as a header) as S3 signs it in a presigned PUT, so bytes cannot be stored
 * under another type than the document declares.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** HEAD is verified as GET: a download address may also be asked for its headers. */
export type SignedMethod = 'GET' | 'PUT';

export interface SignedTarget {
  method: SignedMethod;
  /** The route path, `/uploads/<org>/<doc>`, without any prefix of the public URL. */
  path: string;
  /** Unix seconds after which the address no longer works. */
  expires: number;
  /** Uploads only: the most bytes the PUT may send. */
  size?: number | undefined;
  /** Uploads only: the Content-Type header the PUT must send (absent counts as empty). */
  contentType?: string | undefined;
}

export type Verification = { ok: true; expires: number; size: number | undefined } | { ok: false; reason: 'malformed' | 'mismatch' | 'expired' };

const DIGITS = /^(0|[1-9]\d{0,15})$/;
const HEX_SHA256 = /^[0-9a-f]{64}$/;

function mac(secret: string, target: SignedTarget): Buffer {
  // A JSON array keeps the fields apart whatever they contain. Downloads sign no Content-Type.
  const fields = ['uploads-v1', target.method, target.path, target.expires, target.size ?? null];
  if (target.method === 'PUT') fields.push(canonicalContentType(target.contentType));
  return createHmac('sha256', secret).update(JSON.stringify(fields)).digest();
}

/**
 * A Content-Type as AWS Signature Version 4 canonicalizes a signed header's value: trimmed, runs of
 * spaces made one, case kept. So this stand-in refuses exactly what S3 refuses (403
 * SignatureDoesNotMatch): `text/plain; charset=utf-8` is not `text/plain`.
 */
function canonicalContentType(value: string | undefined): string {
  return (value ?? '').trim().replace(/ +/g, ' ');
}

export function sign(secret: string, target: SignedTarget): string {
  return mac(secret, target).toString('hex');
}

/** `expires=...&size=...&signature=...` (size only when the target has one). */
export function signedQuery(secret: string, target: SignedTarget): string {
  const query = new URLSearchParams({ expires: String(target.expires) });
  if (target.size !== undefined) query.set('size', String(target.size));
  query.set('signature', sign(secret, target));
  return query.toString();
}

/** The one value of a parameter; undefined when absent, null when repeated. */
function single(query: URLSearchParams, name: string): string | undefined | null {
  const values = query.getAll(name);
  if (values.length === 0) return undefined;
  return values.length === 1 ? values[0]! : null;
}

/** `contentType`: the request's Content-Type header (PUT only; absent counts as empty). */
export function verifySignedQuery(secret: string, request: { method: string; path: string; query: URLSearchParams; now: Date; contentType?: string | undefined }): Verification {
  const method: SignedMethod | undefined = request.method === 'PUT' ? 'PUT' : request.method === 'GET' || request.method === 'HEAD' ? 'GET' : undefined;
  const expires = single(request.query, 'expires');
  const size = single(request.query, 'size');
  const signature = single(request.query, 'signature');
  if (!method || typeof expires !== 'string' || !DIGITS.test(expires) || typeof signature !== 'string' || !HEX_SHA256.test(signature)) {
    return { ok: false, reason: 'malformed' };
  }
  // Uploads carry the declared size; downloads never do.
  if (method === 'PUT' ? typeof size !== 'string' || !DIGITS.test(size) : size !== undefined) return { ok: false, reason: 'malformed' };
  const target: SignedTarget = { method, path: request.path, expires: Number(expires), size: size === undefined || size === null ? undefined : Number(size), contentType: request.contentType };
  if (!timingSafeEqual(Buffer.from(signature, 'hex'), mac(secret, target))) return { ok: false, reason: 'mismatch' };
  if (target.expires * 1000 <= request.now.getTime()) return { ok: false, reason: 'expired' };
  return { ok: true, expires: target.expires, size: target.size };
}

/**
 * The one opaque cursor of documents.list, jobs.list and organizations.auditLog (specification,
 * "Pagination"): the last row's (created_at, id), signed with the server secret, so a value the
 * service did not issue answers 400 instead of paging somewhere unexpected.
 * `at` is PostgreSQL's own text of the timestamptz: microseconds survive the round trip exactly.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { badRequest } from '../contract/errors.ts';

export interface CursorPosition {
  /** `created_at::text` of the last row on the page. */
  at: string;
  id: string;
}

export function encodeCursor(secret: string, position: CursorPosition, scope: string): string {
  const payload = Buffer.from(JSON.stringify([position.at, position.id])).toString('base64url');
  return `${payload}.${tag(secret, scope, payload)}`;
}

/** The position a cursor stands for; 400 BAD_REQUEST for anything the service did not issue for this list. */
export function decodeCursor(secret: string, cursor: string, scope: string): CursorPosition {
  const [payload, signature, extra] = cursor.split('.');
  // Compare bytes, not characters: a non-ASCII signature of the right length must not throw.
  const given = Buffer.from(signature ?? '');
  const expected = Buffer.from(payload ? tag(secret, scope, payload) : '');
  const valid = extra === undefined && payload && signature && given.length === expected.length && timingSafeEqual(given, expected);
  if (valid) {
    try {
      const [at, id] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown[];
      if (typeof at === 'string' && typeof id === 'string') return { at, id };
    } catch {
      // fall through to the 400
    }
  }
  throw badRequest([{ path: ['cursor'], message: 'is not a cursor this service issued for this list' }], 'Invalid cursor.');
}

/** The scope (e.g. the workspace id) binds a cursor to its list, so one list's cursor cannot page another. */
function tag(secret: string, scope: string, payload: string): string {
  return createHmac('sha256', secret).update(`cursor\n${scope}\n${payload}`).digest('base64url');
}

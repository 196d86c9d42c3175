/**
 * The `idempotency_keys` table (sql/0011_idempotency_keys.sql): the only module that writes it.
 * Each statement is one autocommitted step, never a transaction held across the handler (on the
 * embedded database the handler needs the one connection). What the steps mean, and when each is
 * taken, is decided in idempotent-call.ts.
 *
 * Every change after the claim names the `lock_token` it expects: a request whose row was taken
 * over (its lease lapsed, or its key expired) changes nothing.
 *
 * `completed_at` is set by the work's own transaction (markWorkDone, inside it, just before its
 * COMMIT): a row with it and no answer yet is a key whose work committed. Nothing gives such a key
 * back or takes it over, so a retry cannot do that work a second time.
 */
import type { Sql } from '../db/connection.ts';

export interface KeyId {
  caller: string;
  key: string;
}

export interface KeyClaim extends KeyId {
  operation: string;
  requestHash: string;
  lockToken: string;
  now: Date;
}

export interface KeyRow extends KeyId {
  operation: string;
  requestHash: string;
  lockToken: string;
  lockedAt: Date;
  /** Null while the first request runs. */
  response: { status: number; body: unknown } | null;
  /** The work committed (its transaction marked the row), whether or not its answer is kept yet. */
  workDone: boolean;
  createdAt: Date;
}

interface RawRow {
  caller: string;
  key: string;
  operation: string;
  request_hash: string;
  lock_token: string;
  locked_at: Date;
  response_status: number | null;
  response_body: string | null;
  created_at: Date;
  completed_at: Date | null;
}

/** Inserts the key's row, held by `lockToken`; false when the caller already has a row for this key. */
export async function claimKey(sql: Sql, claim: KeyClaim): Promise<boolean> {
  const rows = await sql`
    insert into idempotency_keys (caller, key, operation, request_hash, lock_token, locked_at, created_at)
    values (${claim.caller}, ${claim.key}, ${claim.operation}, ${claim.requestHash}, ${claim.lockToken}, ${claim.now}, ${claim.now})
    on conflict (caller, key) do nothing
    returning caller`;
  return rows.length === 1;
}

/** The caller's row for this key, if any (the body as kept, parsed). */
export async function findKey(sql: Sql, id: KeyId): Promise<KeyRow | undefined> {
  // The body is read as text: JSON.parse keeps the key order the answer was written in.
  const [row] = await sql<RawRow[]>`
    select caller, key, operation, request_hash, lock_token, locked_at, response_status, response_body::text as response_body, created_at, completed_at
    from idempotency_keys where caller = ${id.caller} and key = ${id.key}`;
  if (!row) return undefined;
  return {
    caller: row.caller,
    key: row.key,
    operation: row.operation,
    requestHash: row.request_hash,
    lockToken: row.lock_token,
    lockedAt: row.locked_at,
    response: row.response_status === null || row.response_body === null ? null : { status: row.response_status, body: JSON.parse(row.response_body) },
    createdAt: row.created_at,
    workDone: row.completed_at !== null,
  };
}

/**
 * Starts the row over for a new request (its key expired, or its holder's lease lapsed), if it is
 * still held by `seenToken`: of two requests that both saw the same stale row, one wins. A lapsed
 * lease is taken over only while its work has not committed (`expired` false): the update waits
 * for a transaction of that work still holding the row, then sees whether it committed.
 */
export async function takeOverKey(sql: Sql, claim: KeyClaim, seenToken: string, expired: boolean): Promise<boolean> {
  const rows = await sql`
    update idempotency_keys set
      operation = ${claim.operation}, request_hash = ${claim.requestHash}, lock_token = ${claim.lockToken},
      locked_at = ${claim.now}, created_at = ${claim.now}, response_status = null, response_body = null, completed_at = null
    where caller = ${claim.caller} and key = ${claim.key} and lock_token = ${seenToken}
      ${expired ? sql`` : sql`and response_status is null and completed_at is null`}
    returning caller`;
  return rows.length === 1;
}

/**
 * Marks, inside the work's transaction `tx`, that the work is done (see above); false when the row
 * is no longer `lockToken`'s (taken over: the work must not commit).
 */
export async function markWorkDone(tx: Sql, id: KeyId, lockToken: string): Promise<boolean> {
  const rows = await tx`
    update idempotency_keys set completed_at = now()
    where caller = ${id.caller} and key = ${id.key} and lock_token = ${lockToken} and response_status is null
    returning caller`;
  return rows.length === 1;
}

/** Keeps the first answer in the row `lockToken` holds; false when the row is no longer its own. */
export async function saveAnswer(sql: Sql, id: KeyId, lockToken: string, answer: { status: number; body: unknown }, now: Date): Promise<boolean> {
  // Sent as text, then cast to json, which keeps the text as is: a parameter typed json would be
  // serialized again by the driver, and jsonb would reorder the keys.
  const rows = await sql`
    update idempotency_keys set response_status = ${answer.status}, response_body = ${JSON.stringify(answer.body)}::text::json, completed_at = ${now}
    where caller = ${id.caller} and key = ${id.key} and lock_token = ${lockToken} and response_status is null
    returning caller`;
  return rows.length === 1;
}

/**
 * Gives the key back (its request kept no answer), if `lockToken` still holds it unanswered and its
 * work did not commit. On PostgreSQL the delete waits for a transaction of the work that still
 * holds the row (one whose COMMIT is under way) and then judges the committed row; on the embedded
 * database it runs after that transaction anyway (one connection). Answers 'done' when the work
 * committed (the key is kept), else 'released' (given back, or no longer this request's).
 */
export async function releaseKey(sql: Sql, id: KeyId, lockToken: string): Promise<'released' | 'done'> {
  const deleted = await sql`
    delete from idempotency_keys
    where caller = ${id.caller} and key = ${id.key} and lock_token = ${lockToken} and response_status is null and completed_at is null
    returning caller`;
  if (deleted.length === 1) return 'released';
  const [row] = await sql<{ done: boolean }[]>`
    select completed_at is not null as done from idempotency_keys
    where caller = ${id.caller} and key = ${id.key} and lock_token = ${lockToken} and response_status is null`;
  return row?.done ? 'done' : 'released';
}

/** Deletes up to `limit` keys first used before `before` (the sweeper's batches). */
export async function deleteExpiredKeys(sql: Sql, before: Date, limit: number): Promise<{ count: number }> {
  return sql`
    delete from idempotency_keys k
    using (select caller, key from idempotency_keys where created_at < ${before} limit ${limit}) expired
    where k.caller = expired.caller and k.key = expired.key and k.created_at < ${before}`;
}

/**
 * Single-use tokens sent by email (verification, password reset), in verification_tokens. The
 * emailed token is `<id>.<secret>` as for sessions (src/auth/tokens.ts): the row is found by the
 * id (stored as `vt_<id>`), only SHA-256(secret) is kept, and a token is spent with one atomic
 * update, so two requests presenting the same token cannot both succeed.
 */
import type { Sql } from '../../db/connection.ts';
import { issueSecret, parseToken, secretMatches } from '../tokens.ts';
import type { Db } from '../../db/db.ts';


export type TokenPurpose = 'email-verification' | 'password-reset';

/** Both kinds live one hour (contract: auth.verifyEmail, auth.requestPasswordReset). */
export const EMAIL_TOKEN_LIFETIME_MS = 3600_000;

export interface UsableToken {
  rowId: string;
  userId: string;
  /** The address the token was sent to. */
  email: string;
}

/** Stores a new token and answers the string to put in the emailed link. */
export async function issueEmailToken(sql: Db, options: { purpose: TokenPurpose; userId: string; email: string; now: Date }): Promise<string> {
  const { id, token, hash } = issueSecret();
  await sql`
    insert into verification_tokens (id, token_hash, purpose, user_id, email, expires_at, created_at)
    values (${rowId(id)}, ${Buffer.from(hash)}, ${options.purpose}, ${options.userId}, ${options.email},
            ${new Date(options.now.getTime() + EMAIL_TOKEN_LIFETIME_MS)}, ${options.now})`;
  return token;
}

/** The token's row when it is ours, for this purpose, unused and unexpired; it is not spent yet. */
export async function findUsableToken(sql: Db, token: string, purpose: TokenPurpose, now: Date): Promise<UsableToken | null> {
  const parts = parseToken(token);
  if (!parts) return null;
  const [row] = await sql<{ id: string; token_hash: Uint8Array; user_id: string; email: string; used_at: Date | null; expires_at: Date }[]>`
    select id, token_hash, user_id, email, used_at, expires_at
    from verification_tokens where id = ${rowId(parts.id)} and purpose = ${purpose}`;
  if (!row || !secretMatches(parts.secret, row.token_hash)) return null;
  if (row.used_at !== null || row.expires_at <= now) return null;
  return { rowId: row.id, userId: row.user_id, email: row.email };
}

/** Spends a token found by findUsableToken; false when another request spent it first (or it expired since). */
export async function spendToken(sql: Db, token: UsableToken, now: Date): Promise<boolean> {
  const rows = await sql`
    update verification_tokens set used_at = ${now}
    where id = ${token.rowId} and used_at is null and expires_at > ${now}
    returning id`;
  return rows.length > 0;
}

/** Spends every outstanding token of a kind for a user: older links die once one has done its job. */
export async function spendUserTokens(sql: Db, userId: string, purpose: TokenPurpose, now: Date): Promise<void> {
  await sql`
    update verification_tokens set used_at = ${now}
    where user_id = ${userId} and purpose = ${purpose} and used_at is null`;
}

function rowId(id: string): string {
  return `vt_${id}`;
}

/**
 * The verification_tokens table (emailed single-use tokens): the only module that writes it, and
 * where its rows become camelCase. Issuing, checking and spending rules are
 * src/auth/accounts/verification-tokens.ts's.
 */
import type { Db } from '../db/db.ts';

export type TokenPurpose = 'email-verification' | 'password-reset';

export interface VerificationToken {
  id: string;
  tokenHash: Uint8Array;
  userId: string;
  /** The address the token was sent to. */
  email: string;
  usedAt: Date | null;
  expiresAt: Date;
}

export async function insertVerificationToken(db: Db, row: { id: string; tokenHash: Uint8Array; purpose: TokenPurpose; userId: string; email: string; expiresAt: Date; now: Date }): Promise<void> {
  await db`
    insert into verification_tokens (id, token_hash, purpose, user_id, email, expires_at, created_at)
    values (${row.id}, ${Buffer.from(row.tokenHash)}, ${row.purpose}, ${row.userId}, ${row.email}, ${row.expiresAt}, ${row.now})`;
}

export async function findVerificationToken(db: Db, id: string, purpose: TokenPurpose): Promise<VerificationToken | null> {
  const [row] = await db<VerificationToken[]>`
    select id, token_hash as "tokenHash", user_id as "userId", email, used_at as "usedAt", expires_at as "expiresAt"
    from verification_tokens where id = ${id} and purpose = ${purpose}`;
  return row ?? null;
}

/** Marks the token used, unless it is used or expired already; answers whether this call spent it. */
export async function spendVerificationToken(db: Db, id: string, now: Date): Promise<boolean> {
  const rows = await db`
    update verification_tokens set used_at = ${now}
    where id = ${id} and used_at is null and expires_at > ${now}
    returning id`;
  return rows.length > 0;
}

/** Marks used every outstanding token of a kind for a user. */
export async function spendUserVerificationTokens(db: Db, userId: string, purpose: TokenPurpose, now: Date): Promise<void> {
  await db`
    update verification_tokens set used_at = ${now}
    where user_id = ${userId} and purpose = ${purpose} and used_at is null`;
}

/** Deletes up to `limit` tokens expired at `now`; answers how many. The rows are found with a scan. */
export async function deleteExpiredVerificationTokens(db: Db, now: Date, limit: number): Promise<number> {
  const result = await db`
    delete from verification_tokens where id in (
      select id from verification_tokens where expires_at <= ${now} limit ${limit})`;
  return result.count;
}

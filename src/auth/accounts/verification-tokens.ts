/**
 * Single-use tokens sent by email (verification, password reset), in verification_tokens
 * (verification-tokens-store.ts). The emailed token is `<id>.<secret>` as for sessions
 * (src/auth/tokens.ts): the row is found by the id (stored as `vt_<id>`), only SHA-256(secret) is
 * kept, and a token is spent with one atomic update, so two requests presenting the same token
 * cannot both succeed.
 */
import type { Db } from '../../db/db.ts';
import { issueSecret, parseToken, secretMatches } from '../tokens.ts';
import * as tokens from '../verification-tokens-store.ts';
import type { TokenPurpose } from '../verification-tokens-store.ts';

export type { TokenPurpose } from '../verification-tokens-store.ts';

/** Both kinds live one hour (contract: auth.verifyEmail, auth.requestPasswordReset). */
export const EMAIL_TOKEN_LIFETIME_MS = 3600_000;

export interface UsableToken {
  rowId: string;
  userId: string;
  /** The address the token was sent to. */
  email: string;
}

/** Stores a new token and answers the string to put in the emailed link. */
export async function issueEmailToken(db: Db, options: { purpose: TokenPurpose; userId: string; email: string; now: Date }): Promise<string> {
  const { id, token, hash } = issueSecret();
  await tokens.insertVerificationToken(db, {
    id: rowId(id),
    tokenHash: hash,
    purpose: options.purpose,
    userId: options.userId,
    email: options.email,
    expiresAt: new Date(options.now.getTime() + EMAIL_TOKEN_LIFETIME_MS),
    now: options.now,
  });
  return token;
}

/** The token's row when it is ours, for this purpose, unused and unexpired; it is not spent yet. */
export async function findUsableToken(db: Db, token: string, purpose: TokenPurpose, now: Date): Promise<UsableToken | null> {
  const parts = parseToken(token);
  if (!parts) return null;
  const row = await tokens.findVerificationToken(db, rowId(parts.id), purpose);
  if (!row || !secretMatches(parts.secret, row.tokenHash)) return null;
  if (row.usedAt !== null || row.expiresAt <= now) return null;
  return { rowId: row.id, userId: row.userId, email: row.email };
}

/** Spends a token found by findUsableToken; false when another request spent it first (or it expired since). */
export async function spendToken(db: Db, token: UsableToken, now: Date): Promise<boolean> {
  return tokens.spendVerificationToken(db, token.rowId, now);
}

/** Spends every outstanding token of a kind for a user: older links die once one has done its job. */
export async function spendUserTokens(db: Db, userId: string, purpose: TokenPurpose, now: Date): Promise<void> {
  await tokens.spendUserVerificationTokens(db, userId, purpose, now);
}

function rowId(id: string): string {
  return `vt_${id}`;
}

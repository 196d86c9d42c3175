/**
 * Sessions (docs/identity.md, "Sessions and tokens", after Lucia): created on sign-in, found by the id half of the
 * token, verified by the hash of the secret half. A session ends after 7 days without use or 30
 * days after it began (1 hour when an admin impersonates); its last-verified time moves at most
 * hourly, and each move renews the cookie and the set-auth-token header. The SQL is
 * sessions-store.ts's.
 */
import type { Db } from '../db/db.ts';
import { issueSecret, parseToken, secretMatches } from './tokens.ts';
import { announceRevocation } from './revocations.ts';
import * as sessions from './sessions-store.ts';
import type { Session } from './sessions-store.ts';
import type { User } from './users-store.ts';

export const sessionPolicy = {
  inactivityMs: 7 * 24 * 3600_000,
  refreshMs: 3600_000,
  absoluteMs: 30 * 24 * 3600_000,
  impersonationMs: 3600_000,
};

export interface ValidSession {
  session: Session;
  user: User;
  /** True when this validation moved last_verified_at: the client gets the token again. */
  renewed: boolean;
}

/** When the session stops being valid if it is not used again. */
export function sessionExpiry(session: Pick<Session, 'lastVerifiedAt' | 'expiresAt'>): Date {
  return new Date(Math.min(session.expiresAt.getTime(), session.lastVerifiedAt.getTime() + sessionPolicy.inactivityMs));
}

export function isBanned(user: Pick<User, 'banned' | 'banExpiresAt'>, now: Date): boolean {
  return user.banned && (user.banExpiresAt === null || user.banExpiresAt > now);
}

export async function createSession(
  db: Db,
  options: { userId: string; now: Date; ip?: string | null; userAgent?: string | null; impersonatedBy?: string | null },
): Promise<{ token: string; session: Session }> {
  const { id, token, hash } = issueSecret();
  const lifetime = options.impersonatedBy ? sessionPolicy.impersonationMs : sessionPolicy.absoluteMs;
  const session = await sessions.insertSession(db, {
    id,
    secretHash: hash,
    userId: options.userId,
    now: options.now,
    expiresAt: new Date(options.now.getTime() + lifetime),
    ipAddress: options.ip ?? null,
    userAgent: options.userAgent?.slice(0, 500) ?? null,
    impersonatedBy: options.impersonatedBy ?? null,
  });
  return { token, session };
}

/** The session a token stands for, or null when it is unknown, wrong, expired or its user is banned. */
export async function validateSessionToken(db: Db, token: string, now: Date): Promise<ValidSession | null> {
  const parts = parseToken(token);
  if (!parts) return null;
  const found = await sessions.findSessionWithUser(db, parts.id);
  if (!found || !secretMatches(parts.secret, found.secretHash)) return null;
  const { session, user } = found;
  if (sessionExpiry(session) <= now || isBanned(user, now)) {
    await sessions.deleteSession(db, session.id);
    return null;
  }
  if (now.getTime() - session.lastVerifiedAt.getTime() < sessionPolicy.refreshMs) return { session, user, renewed: false };
  await sessions.touchSession(db, session.id, now);
  return { session: { ...session, lastVerifiedAt: now }, user, renewed: true };
}

/** Whether the session is still valid (not ended, not expired, its user not banned), without renewing it. */
export async function sessionStillValid(db: Db, sessionId: string, userId: string, now: Date): Promise<boolean> {
  const row = await sessions.findSessionValidity(db, sessionId, userId);
  return row !== null && sessionExpiry(row) > now && !isBanned(row, now);
}

/** Ends the session; its open streams end at once (revocations.ts). */
export async function deleteSession(db: Db, id: string): Promise<void> {
  await sessions.deleteSession(db, id);
  await announceRevocation(db, { kind: 'session', sessionId: id });
}

/**
 * Deletes the session only when it belongs to `userId`; false otherwise (the same answer for
 * another user's session as for an unknown id). Its open streams end at once.
 */
export async function deleteOwnSession(db: Db, userId: string, id: string): Promise<boolean> {
  const count = await sessions.deleteOwnSession(db, userId, id);
  if (count > 0) await announceRevocation(db, { kind: 'session', sessionId: id });
  return count > 0;
}

/** Ends every session of a user, except `keep` when given; answers how many ended. Their open streams end at once. */
export async function deleteUserSessions(db: Db, userId: string, keep?: string): Promise<number> {
  const count = await sessions.deleteUserSessions(db, userId, keep);
  // The kept session's streams re-check too, and stay.
  if (count > 0) await announceRevocation(db, { kind: 'user', userId });
  return count;
}

/**
 * Like deleteUserSessions, for a transaction that changes the password too (or takes the account
 * over): the revocation is announced whether or not a session ended, and goes out on commit.
 */
export async function endAllSessions(tx: Db, userId: string): Promise<void> {
  await sessions.deleteUserSessions(tx, userId);
  await announceRevocation(tx, { kind: 'user', userId });
}

/** The user's sessions that are still valid, newest first. */
export async function listUserSessions(db: Db, userId: string, now: Date): Promise<Session[]> {
  const rows = await sessions.listUserSessions(db, userId);
  return rows.filter((session) => sessionExpiry(session) > now);
}

/**
 * The sessions table: the only module that writes it, and where its rows become camelCase. What
 * a session may do and when it ends (expiry, renewal, bans) is src/auth/sessions.ts's; the
 * announcements that end open streams (revocations.ts) are made by the callers, on the same
 * connection, after the deletes here.
 */
import type { Db } from '../db/db.ts';
import { userFromJson, type User, type UserJson } from './users-store.ts';

export interface Session {
  id: string;
  userId: string;
  createdAt: Date;
  lastVerifiedAt: Date;
  /** The absolute cap (30 days; 1 hour for impersonation). */
  expiresAt: Date;
  ipAddress: string | null;
  userAgent: string | null;
  /** The platform admin impersonating the user through this session. */
  impersonatedBy: string | null;
}

// A constant list, so `unsafe` injects nothing from outside. The secret's hash is never part of a Session.
const SESSION_COLUMNS =
  'id, user_id as "userId", created_at as "createdAt", last_verified_at as "lastVerifiedAt", expires_at as "expiresAt", ' +
  'ip_address as "ipAddress", user_agent as "userAgent", impersonated_by as "impersonatedBy"';

export async function insertSession(
  db: Db,
  row: { id: string; secretHash: Uint8Array; userId: string; now: Date; expiresAt: Date; ipAddress: string | null; userAgent: string | null; impersonatedBy: string | null },
): Promise<Session> {
  const [session] = await db<Session[]>`
    insert into sessions (id, secret_hash, user_id, created_at, last_verified_at, expires_at, ip_address, user_agent, impersonated_by)
    values (${row.id}, ${Buffer.from(row.secretHash)}, ${row.userId}, ${row.now}, ${row.now}, ${row.expiresAt},
            ${row.ipAddress}, ${row.userAgent}, ${row.impersonatedBy})
    returning ${db.unsafe(SESSION_COLUMNS)}`;
  return session!;
}

export async function findSession(db: Db, id: string): Promise<Session | null> {
  const [row] = await db<Session[]>`select ${db.unsafe(SESSION_COLUMNS)} from sessions where id = ${id}`;
  return row ?? null;
}

/** The session with this id, the hash of its secret and its user, in one read (every authenticated request). */
export async function findSessionWithUser(db: Db, id: string): Promise<{ session: Session; secretHash: Uint8Array; user: User } | null> {
  const [row] = await db<(Session & { secretHash: Uint8Array; user: UserJson })[]>`
    select s.*, to_jsonb(u) as user
    from (select ${db.unsafe(SESSION_COLUMNS)}, secret_hash as "secretHash" from sessions where id = ${id}) s
    join users u on u.id = s."userId"`;
  if (!row) return null;
  const { secretHash, user, ...session } = row;
  return { session, secretHash, user: userFromJson(user) };
}

/** What decides whether the user's session is still valid (its expiry, its user's ban); null when it is gone. */
export async function findSessionValidity(db: Db, sessionId: string, userId: string): Promise<(Pick<Session, 'lastVerifiedAt' | 'expiresAt'> & Pick<User, 'banned' | 'banExpiresAt'>) | null> {
  const [row] = await db<(Pick<Session, 'lastVerifiedAt' | 'expiresAt'> & Pick<User, 'banned' | 'banExpiresAt'>)[]>`
    select s.last_verified_at as "lastVerifiedAt", s.expires_at as "expiresAt", u.banned, u.ban_expires_at as "banExpiresAt"
    from sessions s join users u on u.id = s.user_id
    where s.id = ${sessionId} and s.user_id = ${userId}`;
  return row ?? null;
}

/** The user's sessions, newest first, ended ones included. */
export async function listUserSessions(db: Db, userId: string): Promise<Session[]> {
  return db<Session[]>`select ${db.unsafe(SESSION_COLUMNS)} from sessions where user_id = ${userId} order by created_at desc, id`;
}

export async function touchSession(db: Db, id: string, now: Date): Promise<void> {
  await db`update sessions set last_verified_at = ${now} where id = ${id}`;
}

/** Answers how many sessions were deleted (0 or 1). */
export async function deleteSession(db: Db, id: string): Promise<number> {
  const result = await db`delete from sessions where id = ${id}`;
  return result.count;
}

/**
 * Deletes the session only when it belongs to `userId`; 0 otherwise. One statement, and the same
 * answer for another user's session as for an unknown id, so ids of others are not confirmed.
 */
export async function deleteOwnSession(db: Db, userId: string, id: string): Promise<number> {
  const result = await db`delete from sessions where id = ${id} and user_id = ${userId}`;
  return result.count;
}

/** Deletes every session of the user, except `keep` when given; answers how many. */
export async function deleteUserSessions(db: Db, userId: string, keep?: string): Promise<number> {
  const result = keep ? await db`delete from sessions where user_id = ${userId} and id <> ${keep}` : await db`delete from sessions where user_id = ${userId}`;
  return result.count;
}

/** Deletes the user's sessions and the impersonation sessions they run as someone else; answers how many. */
export async function deleteSessionsOfUserAndTheirImpersonations(db: Db, userId: string): Promise<number> {
  const result = await db`delete from sessions where user_id = ${userId} or impersonated_by = ${userId}`;
  return result.count;
}

/** Deletes the impersonation sessions a platform admin runs; answers how many. */
export async function deleteImpersonationsBy(db: Db, adminId: string): Promise<number> {
  const result = await db`delete from sessions where impersonated_by = ${adminId}`;
  return result.count;
}

/**
 * Deletes up to `limit` sessions past their absolute expiry (`now`) or unused since `idleSince`;
 * answers how many. The rows are found with a scan (no index on the expiry columns).
 */
export async function deleteEndedSessions(db: Db, options: { now: Date; idleSince: Date; limit: number }): Promise<number> {
  const result = await db`
    delete from sessions where id in (
      select id from sessions where expires_at <= ${options.now} or last_verified_at <= ${options.idleSince} limit ${options.limit})`;
  return result.count;
}

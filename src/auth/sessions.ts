/**
 * Sessions (design/identity.md, after Lucia): created on sign-in, found by the id half of the
 * token, verified by the hash of the secret half. A session ends after 7 days without use or 30
 * days after it began (1 hour when an admin impersonates); its last-verified time moves at most
 * hourly, and each move renews the cookie and the set-auth-token header.
 */
import type { Sql } from '../db/connection.ts';
import { issueSecret, parseToken, secretMatches } from './tokens.ts';
import type { Db } from '../db/db.ts';
import { announceRevocation } from './revocations.ts';

export const sessionPolicy = {
  inactivityMs: 7 * 24 * 3600_000,
  refreshMs: 3600_000,
  absoluteMs: 30 * 24 * 3600_000,
  impersonationMs: 3600_000,
};

export interface SessionRow {
  id: string;
  user_id: string;
  created_at: Date;
  last_verified_at: Date;
  expires_at: Date;
  ip_address: string | null;
  user_agent: string | null;
  impersonated_by: string | null;
}

export interface UserRow {
  id: string;
  email: string;
  email_verified: boolean;
  name: string;
  image: string | null;
  role: string | null;
  banned: boolean;
  ban_reason: string | null;
  ban_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface ValidSession {
  session: SessionRow;
  user: UserRow;
  /** True when this validation moved last_verified_at: the client gets the token again. */
  renewed: boolean;
}

/** When the session stops being valid if it is not used again. */
export function sessionExpiry(session: Pick<SessionRow, 'last_verified_at' | 'expires_at'>): Date {
  return new Date(Math.min(session.expires_at.getTime(), session.last_verified_at.getTime() + sessionPolicy.inactivityMs));
}

export function isBanned(user: Pick<UserRow, 'banned' | 'ban_expires_at'>, now: Date): boolean {
  return user.banned && (user.ban_expires_at === null || user.ban_expires_at > now);
}

export async function createSession(
  sql: Db,
  options: { userId: string; now: Date; ip?: string | null; userAgent?: string | null; impersonatedBy?: string | null },
): Promise<{ token: string; session: SessionRow }> {
  const { id, token, hash } = issueSecret();
  const lifetime = options.impersonatedBy ? sessionPolicy.impersonationMs : sessionPolicy.absoluteMs;
  const [session] = await sql<SessionRow[]>`
    insert into sessions (id, secret_hash, user_id, created_at, last_verified_at, expires_at, ip_address, user_agent, impersonated_by)
    values (${id}, ${Buffer.from(hash)}, ${options.userId}, ${options.now}, ${options.now}, ${new Date(options.now.getTime() + lifetime)},
            ${options.ip ?? null}, ${options.userAgent?.slice(0, 500) ?? null}, ${options.impersonatedBy ?? null})
    returning id, user_id, created_at, last_verified_at, expires_at, ip_address, user_agent, impersonated_by`;
  return { token, session: session! };
}

/** The session a token stands for, or null when it is unknown, wrong, expired or its user is banned. */
export async function validateSessionToken(sql: Sql, token: string, now: Date): Promise<ValidSession | null> {
  const parts = parseToken(token);
  if (!parts) return null;
  const [row] = await sql<(SessionRow & { secret_hash: Uint8Array; user: UserRow })[]>`
    select s.id, s.secret_hash, s.user_id, s.created_at, s.last_verified_at, s.expires_at, s.ip_address, s.user_agent,
           s.impersonated_by, to_jsonb(u) as user
    from sessions s join users u on u.id = s.user_id
    where s.id = ${parts.id}`;
  if (!row || !secretMatches(parts.secret, row.secret_hash)) return null;
  const { secret_hash: _hash, user: rawUser, ...session } = row;
  const user = userFromJson(rawUser);
  if (sessionExpiry(session) <= now || isBanned(user, now)) {
    await sql`delete from sessions where id = ${session.id}`;
    return null;
  }
  if (now.getTime() - session.last_verified_at.getTime() < sessionPolicy.refreshMs) return { session, user, renewed: false };
  await sql`update sessions set last_verified_at = ${now} where id = ${session.id}`;
  return { session: { ...session, last_verified_at: now }, user, renewed: true };
}

/** Whether the session is still valid (not ended, not expired, its user not banned), without renewing it. */
export async function sessionStillValid(sql: Sql, sessionId: string, userId: string, now: Date): Promise<boolean> {
  const [row] = await sql<(Pick<SessionRow, 'last_verified_at' | 'expires_at'> & Pick<UserRow, 'banned' | 'ban_expires_at'>)[]>`
    select s.last_verified_at, s.expires_at, u.banned, u.ban_expires_at
    from sessions s join users u on u.id = s.user_id
    where s.id = ${sessionId} and s.user_id = ${userId}`;
  return row !== undefined && sessionExpiry(row) > now && !isBanned(row, now);
}

/** Ends the session; its open streams end at once (revocations.ts). */
export async function deleteSession(sql: Sql, id: string): Promise<void> {
  await sql`delete from sessions where id = ${id}`;
  await announceRevocation(sql, { kind: 'session', sessionId: id });
}

/** Ends every session of a user, except `keep` when given; answers how many ended. Their open streams end at once. */
export async function deleteUserSessions(sql: Sql, userId: string, keep?: string): Promise<number> {
  const result = keep ? await sql`delete from sessions where user_id = ${userId} and id <> ${keep}` : await sql`delete from sessions where user_id = ${userId}`;
  // The kept session's streams re-check too, and stay.
  if (result.count > 0) await announceRevocation(sql, { kind: 'user', userId });
  return result.count;
}

export async function listUserSessions(sql: Sql, userId: string, now: Date): Promise<SessionRow[]> {
  const rows = await sql<SessionRow[]>`
    select id, user_id, created_at, last_verified_at, expires_at, ip_address, user_agent, impersonated_by
    from sessions where user_id = ${userId} order by created_at desc, id`;
  return rows.filter((session) => sessionExpiry(session) > now);
}

/** to_jsonb turns timestamps into strings; bring the row back to its column types. */
function userFromJson(user: Record<string, any>): UserRow {
  return {
    ...(user as UserRow),
    created_at: new Date(user.created_at),
    updated_at: new Date(user.updated_at),
    ban_expires_at: user.ban_expires_at ? new Date(user.ban_expires_at) : null,
  };
}

/** SQL the account routes need beyond src/auth/sessions.ts: reading one session, revoking one's own, ending all in a transaction. */
import type { TransactionSql } from 'postgres';
import type { Sql } from '../../db/connection.ts';
import type { SessionRow } from '../sessions.ts';
import { announceRevocation } from '../revocations.ts';

export async function findSession(sql: Sql, id: string): Promise<SessionRow | null> {
  const [row] = await sql<SessionRow[]>`
    select id, user_id, created_at, last_verified_at, expires_at, ip_address, user_agent, impersonated_by
    from sessions where id = ${id}`;
  return row ?? null;
}

/**
 * Deletes the session only when it belongs to `userId`; false otherwise. One statement, and the
 * same answer for another user's session as for an unknown id, so ids of others are not confirmed.
 */
export async function deleteOwnSession(sql: Sql, userId: string, id: string): Promise<boolean> {
  const result = await sql`delete from sessions where id = ${id} and user_id = ${userId}`;
  if (result.count > 0) await announceRevocation(sql, { kind: 'session', sessionId: id });
  return result.count > 0;
}

/** Like deleteUserSessions (src/auth/sessions.ts), inside a transaction that changes the password too. */
export async function deleteAllSessions(tx: TransactionSql, userId: string): Promise<void> {
  await tx`delete from sessions where user_id = ${userId}`;
  await announceRevocation(tx, { kind: 'user', userId });
}

/**
 * SQL of the platform admin's user operations. Each change and its platform-level audit entry
 * (organization_id null) commit together; the guards (last owner) run inside that transaction on
 * locked rows, so two admins acting at once cannot slip past them.
 */
import type { TransactionSql } from 'postgres';
import type { Principal } from '../auth/principal.ts';
import type { Sql } from '../db/connection.ts';
import { writeAudit } from '../audit/audit-log.ts';
import { createSession, type SessionRow, type UserRow } from '../auth/sessions.ts';
import type { Db } from '../db/db.ts';
import { announceRevocation } from '../auth/revocations.ts';

type Actor = Pick<Principal, 'userId' | 'email' | 'impersonatedBy'>;

export async function findUser(sql: Db, id: string): Promise<UserRow | null> {
  const [row] = await sql<UserRow[]>`select * from users where id = ${id}`;
  return row ?? null;
}

export async function listUsers(
  sql: Sql,
  options: { field: 'email' | 'name'; value: string | undefined; limit: number; offset: number },
): Promise<{ users: UserRow[]; total: number }> {
  // strpos on lower() is a plain substring test: no LIKE wildcards to escape in the search text.
  const value = options.value ?? '';
  const matches = options.field === 'name' ? sql`strpos(lower(name), lower(${value})) > 0` : sql`strpos(lower(email), lower(${value})) > 0`;
  const users = await sql<UserRow[]>`
    select * from users where ${matches}
    order by created_at desc, id desc
    limit ${options.limit} offset ${options.offset}`;
  const [count] = await sql<{ total: number }[]>`select count(*)::int as total from users where ${matches}`;
  return { users, total: count!.total };
}

export async function setUserRole(sql: Sql, options: { userId: string; role: 'admin' | 'user'; actor: Actor; now: Date }): Promise<UserRow | null> {
  return sql.begin(async (tx) => {
    const before = await lockUser(tx, options.userId);
    if (!before) return null;
    const [user] = await tx<UserRow[]>`update users set role = ${options.role}, updated_at = ${options.now} where id = ${options.userId} returning *`;
    // An admin no longer: the impersonations they started end with the role.
    if (options.role !== 'admin') {
      await tx`delete from sessions where impersonated_by = ${options.userId}`;
      await announceRevocation(tx, { kind: 'user', userId: options.userId });
    }
    await writeAudit(tx, {
      organizationId: null,
      action: 'user.role_changed',
      actor: options.actor,
      targetType: 'user',
      targetId: options.userId,
      metadata: { from: before.role, to: options.role },
    }, options.now);
    return user!;
  });
}

/** Bans the user and ends every session of theirs (impersonations they run included) in the same transaction. */
export async function banUser(
  sql: Sql,
  options: { userId: string; reason: string | null; expiresAt: Date | null; actor: Actor; now: Date },
): Promise<{ user: UserRow; sessionsEnded: number } | null> {
  return sql.begin(async (tx) => {
    if (!(await lockUser(tx, options.userId))) return null;
    const [user] = await tx<UserRow[]>`
      update users set banned = true, ban_reason = ${options.reason}, ban_expires_at = ${options.expiresAt}, updated_at = ${options.now}
      where id = ${options.userId} returning *`;
    const ended = await tx`delete from sessions where user_id = ${options.userId} or impersonated_by = ${options.userId}`;
    await announceRevocation(tx, { kind: 'user', userId: options.userId });
    await writeAudit(tx, {
      organizationId: null,
      action: 'user.banned',
      actor: options.actor,
      targetType: 'user',
      targetId: options.userId,
      metadata: { reason: options.reason, expiresAt: options.expiresAt?.toISOString() ?? null, sessionsEnded: ended.count },
    }, options.now);
    return { user: user!, sessionsEnded: ended.count };
  });
}

/** Lifts a ban; a user who is not banned is answered as is, with no change and no audit entry. */
export async function unbanUser(sql: Sql, options: { userId: string; actor: Actor; now: Date }): Promise<UserRow | null> {
  return sql.begin(async (tx) => {
    const before = await lockUser(tx, options.userId);
    if (!before || !before.banned) return before;
    const [user] = await tx<UserRow[]>`
      update users set banned = false, ban_reason = null, ban_expires_at = null, updated_at = ${options.now}
      where id = ${options.userId} returning *`;
    await writeAudit(tx, { organizationId: null, action: 'user.unbanned', actor: options.actor, targetType: 'user', targetId: options.userId }, options.now);
    return user!;
  });
}

/** Creates the session an admin signs in with (an impersonation session, or the admin's own again) and audits it. */
export async function startAuditedSession(
  sql: Sql,
  options: {
    userId: string;
    impersonatedBy: string | null;
    ip: string;
    userAgent: string | null;
    now: Date;
    audit: { action: 'user.impersonation_started' | 'user.impersonation_stopped'; actor: Actor; targetId: string; metadata: Record<string, unknown> };
    /** The impersonation session that ends with this one (stop-impersonating). */
    endSessionId?: string;
  },
): Promise<{ token: string; session: SessionRow }> {
  return sql.begin(async (tx) => {
    if (options.endSessionId) {
      await tx`delete from sessions where id = ${options.endSessionId}`;
      await announceRevocation(tx, { kind: 'session', sessionId: options.endSessionId });
    }
    // createSession runs one insert; its parameter is typed as the pool (TransactionSql has the same tagged-template call).
    const created = await createSession(tx, {
      userId: options.userId,
      now: options.now,
      ip: options.ip,
      userAgent: options.userAgent,
      impersonatedBy: options.impersonatedBy,
    });
    await writeAudit(tx, {
      organizationId: null,
      action: options.audit.action,
      actor: options.audit.actor,
      targetType: 'user',
      targetId: options.audit.targetId,
      metadata: { ...options.audit.metadata, sessionId: created.session.id },
    }, options.now);
    return created;
  });
}

/** Ends every session of the user, and the impersonation sessions they run as someone else. */
export async function revokeUserSessions(sql: Sql, options: { userId: string; actor: Actor; now: Date }): Promise<number | null> {
  return sql.begin(async (tx) => {
    if (!(await lockUser(tx, options.userId))) return null;
    const ended = await tx`delete from sessions where user_id = ${options.userId} or impersonated_by = ${options.userId}`;
    await announceRevocation(tx, { kind: 'user', userId: options.userId });
    await writeAudit(tx, {
      organizationId: null,
      action: 'user.sessions_revoked',
      actor: options.actor,
      targetType: 'user',
      targetId: options.userId,
      metadata: { count: ended.count },
    }, options.now);
    return ended.count;
  });
}

export type RemoveUserResult = { removed: true } | { removed: false; reason: 'not_found' } | { removed: false; reason: 'last_owner'; organizationIds: string[] };

/**
 * Deletes a user unless they are the last owner of an organization. The owner rows of every
 * organization the user owns are locked first, so a concurrent removal or demotion of a co-owner
 * waits and this check sees its outcome.
 */
export async function removeUser(sql: Sql, options: { userId: string; actor: Actor; now: Date }): Promise<RemoveUserResult> {
  return sql.begin(async (tx) => {
    const user = await lockUser(tx, options.userId);
    if (!user) return { removed: false, reason: 'not_found' } as const;
    const owners = await tx<{ organization_id: string; user_id: string }[]>`
      select organization_id, user_id from members
      where role = 'owner' and organization_id in (select organization_id from members where user_id = ${options.userId} and role = 'owner')
      order by id
      for update`;
    const soleOwned = [...new Set(owners.map((row) => row.organization_id))].filter((organizationId) =>
      owners.every((row) => row.organization_id !== organizationId || row.user_id === options.userId));
    if (soleOwned.length > 0) return { removed: false, reason: 'last_owner', organizationIds: soleOwned } as const;
    // Audited before the deletion; the entry has no foreign key to the user, so it outlives them.
    await writeAudit(tx, {
      organizationId: null,
      action: 'user.removed',
      actor: options.actor,
      targetType: 'user',
      targetId: options.userId,
      metadata: { email: user.email, name: user.name },
    }, options.now);
    // Accounts, sessions, memberships, team memberships and tokens go with the row (on delete cascade).
    await tx`delete from users where id = ${options.userId}`;
    await announceRevocation(tx, { kind: 'user', userId: options.userId });
    return { removed: true } as const;
  });
}

async function lockUser(tx: TransactionSql, id: string): Promise<UserRow | null> {
  const [row] = await tx<UserRow[]>`select * from users where id = ${id} for update`;
  return row ?? null;
}

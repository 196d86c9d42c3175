/**
 * The platform admin's user operations. Each change and its platform-level audit entry
 * (organization_id null) commit together; the guards (last owner) run inside that transaction on
 * locked rows, so two admins acting at once cannot slip past them. The SQL is the stores'
 * (src/auth/users-store.ts, src/auth/sessions-store.ts, users-store.ts here for the reads).
 */
import type { Principal } from '../auth/principal.ts';
import type { Sql } from '../db/connection.ts';
import { writeAudit } from '../audit/store.ts';
import { announceRevocation } from '../auth/revocations.ts';
import { createSession, deleteSession } from '../auth/sessions.ts';
import { deleteImpersonationsBy, deleteSessionsOfUserAndTheirImpersonations, type Session } from '../auth/sessions-store.ts';
import * as users from '../auth/users-store.ts';
import type { User } from '../auth/users-store.ts';
import { lockOwnersOfOrganizationsOwnedBy } from './users-store.ts';

type Actor = Pick<Principal, 'userId' | 'email' | 'impersonatedBy'>;

export async function setUserRole(sql: Sql, options: { userId: string; role: 'admin' | 'user'; actor: Actor; now: Date }): Promise<User | null> {
  return sql.begin(async (tx) => {
    const before = await users.lockUser(tx, options.userId);
    if (!before) return null;
    const user = await users.setUserRole(tx, options.userId, options.role, options.now);
    // An admin no longer: the impersonations they started end with the role.
    if (options.role !== 'admin') {
      await deleteImpersonationsBy(tx, options.userId);
      await announceRevocation(tx, { kind: 'user', userId: options.userId });
    }
    await writeAudit(
      tx,
      {
        organizationId: null,
        action: 'user.role_changed',
        actor: options.actor,
        targetType: 'user',
        targetId: options.userId,
        metadata: { from: before.role, to: options.role },
      },
      options.now,
    );
    return user!;
  });
}

/** Bans the user and ends every session of theirs (impersonations they run included) in the same transaction. */
export async function banUser(sql: Sql, options: { userId: string; reason: string | null; expiresAt: Date | null; actor: Actor; now: Date }): Promise<{ user: User; sessionsEnded: number } | null> {
  return sql.begin(async (tx) => {
    if (!(await users.lockUser(tx, options.userId))) return null;
    const user = await users.setBan(tx, options.userId, { reason: options.reason, expiresAt: options.expiresAt }, options.now);
    const sessionsEnded = await deleteSessionsOfUserAndTheirImpersonations(tx, options.userId);
    await announceRevocation(tx, { kind: 'user', userId: options.userId });
    await writeAudit(
      tx,
      {
        organizationId: null,
        action: 'user.banned',
        actor: options.actor,
        targetType: 'user',
        targetId: options.userId,
        metadata: { reason: options.reason, expiresAt: options.expiresAt?.toISOString() ?? null, sessionsEnded },
      },
      options.now,
    );
    return { user: user!, sessionsEnded };
  });
}

/** Lifts a ban; a user who is not banned is answered as is, with no change and no audit entry. */
export async function unbanUser(sql: Sql, options: { userId: string; actor: Actor; now: Date }): Promise<User | null> {
  return sql.begin(async (tx) => {
    const before = await users.lockUser(tx, options.userId);
    if (!before || !before.banned) return before;
    const user = await users.clearBan(tx, options.userId, options.now);
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
): Promise<{ token: string; session: Session }> {
  return sql.begin(async (tx) => {
    if (options.endSessionId) await deleteSession(tx, options.endSessionId);
    const created = await createSession(tx, {
      userId: options.userId,
      now: options.now,
      ip: options.ip,
      userAgent: options.userAgent,
      impersonatedBy: options.impersonatedBy,
    });
    await writeAudit(
      tx,
      {
        organizationId: null,
        action: options.audit.action,
        actor: options.audit.actor,
        targetType: 'user',
        targetId: options.audit.targetId,
        metadata: { ...options.audit.metadata, sessionId: created.session.id },
      },
      options.now,
    );
    return created;
  });
}

/** Ends every session of the user, and the impersonation sessions they run as someone else. */
export async function revokeUserSessions(sql: Sql, options: { userId: string; actor: Actor; now: Date }): Promise<number | null> {
  return sql.begin(async (tx) => {
    if (!(await users.lockUser(tx, options.userId))) return null;
    const count = await deleteSessionsOfUserAndTheirImpersonations(tx, options.userId);
    await announceRevocation(tx, { kind: 'user', userId: options.userId });
    await writeAudit(
      tx,
      {
        organizationId: null,
        action: 'user.sessions_revoked',
        actor: options.actor,
        targetType: 'user',
        targetId: options.userId,
        metadata: { count },
      },
      options.now,
    );
    return count;
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
    const user = await users.lockUser(tx, options.userId);
    if (!user) return { removed: false, reason: 'not_found' } as const;
    const owners = await lockOwnersOfOrganizationsOwnedBy(tx, options.userId);
    const soleOwned = [...new Set(owners.map((row) => row.organizationId))].filter((organizationId) => owners.every((row) => row.organizationId !== organizationId || row.userId === options.userId));
    if (soleOwned.length > 0) return { removed: false, reason: 'last_owner', organizationIds: soleOwned } as const;
    // Audited before the deletion; the entry has no foreign key to the user, so it outlives them.
    await writeAudit(
      tx,
      {
        organizationId: null,
        action: 'user.removed',
        actor: options.actor,
        targetType: 'user',
        targetId: options.userId,
        metadata: { email: user.email, name: user.name },
      },
      options.now,
    );
    // Accounts, sessions, memberships, team memberships and tokens go with the row (on delete cascade).
    await users.deleteUser(tx, options.userId);
    await announceRevocation(tx, { kind: 'user', userId: options.userId });
    return { removed: true } as const;
  });
}

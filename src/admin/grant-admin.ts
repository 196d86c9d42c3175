/**
 * Making the first platform admin, before any admin exists to call set-role: the `grant-admin
 * <email>` command, and at `serve` start the existing users listed in ADMIN_EMAILS (users who
 * sign up later with such an email are made admins at sign-up). Each grant is a platform-level
 * audit entry (user.role_changed) with no actor.
 */
import type { Sql } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import { writeAudit } from '../audit/store.ts';
import { lockUserByEmail, setUserRole } from '../auth/users-store.ts';

export type GrantResult = { status: 'granted' | 'already-admin'; userId: string; email: string } | { status: 'no-such-user'; email: string };

/** Sets role 'admin' on the user with this email (any case). */
export async function grantAdmin(sql: Sql, email: string, options: { now: Date; via: 'grant-admin' | 'ADMIN_EMAILS' }): Promise<GrantResult> {
  return sql.begin(async (tx): Promise<GrantResult> => {
    const user = await lockUserByEmail(tx, email.trim());
    if (!user) return { status: 'no-such-user', email: email.trim() };
    if (user.role === 'admin') return { status: 'already-admin', userId: user.id, email: user.email };
    await setUserRole(tx, user.id, 'admin', options.now);
    await writeAudit(
      tx,
      {
        organizationId: null,
        action: 'user.role_changed',
        actor: null,
        targetType: 'user',
        targetId: user.id,
        metadata: { from: user.role, to: 'admin', via: options.via },
      },
      options.now,
    );
    return { status: 'granted', userId: user.id, email: user.email };
  });
}

/** At start: every existing user whose email is in ADMIN_EMAILS becomes an admin; each grant is logged. */
export async function grantConfiguredAdmins(sql: Sql, emails: readonly string[], logger: Logger, now: Date): Promise<GrantResult[]> {
  const results: GrantResult[] = [];
  for (const email of emails) {
    const result = await grantAdmin(sql, email, { now, via: 'ADMIN_EMAILS' });
    results.push(result);
    if (result.status === 'granted') logger.info({ userId: result.userId, email: result.email }, 'platform admin granted (ADMIN_EMAILS)');
    else logger.debug({ email, status: result.status }, 'ADMIN_EMAILS entry needs no grant');
  }
  return results;
}

/** The line `grant-admin` prints. */
export function describeGrant(result: GrantResult): string {
  switch (result.status) {
    case 'granted':
      return `Granted platform admin to ${result.email} (${result.userId}).`;
    case 'already-admin':
      return `${result.email} (${result.userId}) is already a platform admin; nothing changed.`;
    case 'no-such-user':
      return `No user has the email ${result.email}. Sign up first, then run grant-admin again.`;
  }
}

/**
 * A stand-in for sessions and memberships: `Authorization: Bearer <userId>` signs in as that
 * user, and `users` says which organizations each belongs to. It tests the binding layer's access
 * rules over every procedure without creating rows (test/support/users.ts makes real ones).
 */
import type { Memberships } from '../../src/auth/access.ts';
import type { OrganizationRole } from '../../src/auth/permissions.ts';
import type { Authentication } from '../../src/auth/authenticate.ts';

export function fakeIdentity(options: { users: Record<string, { role?: string | null; organizations?: Record<string, OrganizationRole> }>; workspaces?: Record<string, string> }) {
  const authenticate = async (headers: Record<string, string | string[] | undefined>): Promise<Authentication | null> => {
    const match = /^Bearer (\S+)$/.exec(String(headers.authorization ?? ''));
    const user = match ? options.users[match[1]!] : undefined;
    if (!match || !user) return null;
    const principal = { userId: match[1]!, email: `${match[1]}@example.com`, role: user.role ?? null, sessionId: `ses_${match[1]}`, impersonatedBy: null };
    return { principal, via: 'bearer' };
  };
  const memberships: Memberships = {
    roleIn: async (userId, organizationId) => options.users[userId]?.organizations?.[organizationId] ?? null,
    workspaceOrganization: async (workspaceId) => options.workspaces?.[workspaceId] ?? null,
  };
  return { authenticate, memberships };
}

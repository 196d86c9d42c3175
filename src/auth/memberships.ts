/** Memberships read from the database on every check, so a role change or removal applies at once. */
import type { Sql } from '../db/connection.ts';
import type { Memberships } from './access.ts';
import type { OrganizationRole } from './permissions.ts';

export function databaseMemberships(sql: Sql): Memberships {
  return {
    async roleIn(userId, organizationId) {
      const [row] = await sql<{ role: OrganizationRole }[]>`select role from members where user_id = ${userId} and organization_id = ${organizationId}`;
      return row?.role ?? null;
    },
    // Workspaces arrive with their own migration; until then no workspace exists.
    async workspaceOrganization() {
      return null;
    },
  };
}

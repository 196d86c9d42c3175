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
    async workspaceOrganization(workspaceId) {
      const [row] = await sql<{ organization_id: string }[]>`select organization_id from workspaces where id = ${workspaceId}`;
      return row?.organization_id ?? null;
    },
  };
}

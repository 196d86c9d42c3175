/** Memberships read from the database on every check, so a role change or removal applies at once. */
import type { Sql } from '../db/connection.ts';
import type { Memberships } from './access.ts';
import { roleIn } from '../organizations/members-store.ts';
import { findWorkspace } from '../workspaces/store.ts';

export function databaseMemberships(sql: Sql): Memberships {
  return {
    roleIn: (userId, organizationId) => roleIn(sql, organizationId, userId),
    async workspaceOrganization(workspaceId) {
      return (await findWorkspace(sql, workspaceId))?.organizationId ?? null;
    },
  };
}

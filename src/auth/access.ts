/**
 * Enforces the access an operation declares in the contract (`x-access`), once, for every
 * transport: signed in, platform admin, or an organization permission whose organization comes
 * from the input (`organizationId`), from a workspace (`workspaceId`), or from the row the input's
 * id names (`row`: loaded here through the resource's registered loader, 404 when missing).
 * Handlers never authorize again: they get the row and the caller's role from the decision.
 */
import type { Access } from '../contract/procedure-definition.ts';
import type { Principal } from './principal.ts';
import type { Sql } from '../db/connection.ts';
import type { ResourceRegistry } from '../db/resource.ts';
import { ApiError } from '../contract/errors.ts';
import { isPermission, roleHasPermission, type OrganizationRole, type Permission } from './permissions.ts';

/** Where access decisions read memberships and tenants from. */
export interface Memberships {
  /** The caller's role in the organization, or null when not a member. */
  roleIn(userId: string, organizationId: string): Promise<OrganizationRole | null>;
  /** The organization that owns a workspace, or null when there is no such workspace. */
  workspaceOrganization(workspaceId: string): Promise<string | null>;
}

/** The organization an organization-scoped call was authorized in. */
export interface Tenant {
  organizationId: string;
  /** The caller's role there when the check ran (rules finer than the matrix read it). */
  role: OrganizationRole;
  /** The permission the contract declares, for re-checks under a lock (members, invitations). */
  permission: Permission | undefined;
}

export interface AccessDecision {
  tenant: Tenant | null;
  /** The row of a `tenant: row` operation, loaded by its resource's loader. */
  row: unknown;
}

const OPEN: AccessDecision = { tenant: null, row: undefined };

export async function enforceAccess(
  access: Access,
  input: Record<string, unknown>,
  principal: Principal | null,
  services: { memberships: Memberships; db: { sql: Sql }; resources: ResourceRegistry },
): Promise<AccessDecision> {
  if (access === 'public') return OPEN;
  if (!principal) throw new ApiError('UNAUTHORIZED');
  if (access === 'session') return OPEN;
  if (access === 'platform-admin') {
    if (principal.role !== 'admin') throw new ApiError('FORBIDDEN');
    return OPEN;
  }
  if ('role' in access) {
    // Admin first: nobody else learns whether the row exists.
    if (principal.role !== 'admin') throw new ApiError('FORBIDDEN');
    return { tenant: null, row: await loadRow(access, input, services) };
  }
  const { memberships } = services;
  if (access.tenant === 'row') {
    const row = await loadRow(access, input, services);
    const resource = services.resources.find(access.resource)!;
    if (!resource.organizationOf) throw new Error(`${access.resource} rows belong to no organization: declare platform-admin access`);
    const tenant = await authorize(principal, resource.organizationOf(row), access.permission, memberships);
    return { tenant, row };
  }
  let organizationId: string | null;
  if (access.tenant === 'organizationId') {
    organizationId = typeof input.organizationId === 'string' ? input.organizationId : null;
    if (organizationId === null && access.optional) return OPEN;
  } else {
    organizationId = await memberships.workspaceOrganization(String(input.workspaceId));
    if (organizationId === null) throw new ApiError('NOT_FOUND', { message: 'Workspace not found.' });
  }
  if (organizationId === null) throw new ApiError('FORBIDDEN');
  return { tenant: await authorize(principal, organizationId, access.permission, memberships), row: undefined };
}

/** The row a by-id operation names, through its resource's loader: 404 when there is none. */
async function loadRow(access: { resource: string; idField?: string }, input: Record<string, unknown>, services: { db: { sql: Sql }; resources: ResourceRegistry }): Promise<unknown> {
  const resource = services.resources.find(access.resource);
  // A resource without a loader belongs to procedures that are not built yet.
  if (!resource) throw new ApiError('NOT_IMPLEMENTED');
  const row = await resource.load(services.db.sql, String(input[access.idField ?? 'id']));
  if (row === null) throw new ApiError('NOT_FOUND', { message: resource.notFound });
  return row;
}

async function authorize(principal: Principal, organizationId: string, permission: string | undefined, memberships: Memberships): Promise<Tenant> {
  if (permission !== undefined && !isPermission(permission)) throw new Error(`the contract names an unknown permission: ${permission}`);
  const role = await memberships.roleIn(principal.userId, organizationId);
  if (role === null) throw new ApiError('FORBIDDEN');
  if (permission !== undefined && !roleHasPermission(role, permission)) throw new ApiError('FORBIDDEN');
  return { organizationId, role, permission };
}

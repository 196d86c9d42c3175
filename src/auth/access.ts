/**
 * Enforces the access an operation declares in the contract (`x-access`), once, for both
 * transports: signed in, platform admin, or an organization permission whose organization comes
 * from the input (`organizationId`), from a workspace (`workspaceId`), or from the row the handler
 * loads (`row`, checked by the handler through `authorizeRow`).
 */
import type { Access } from '../../generated/procedures.ts';
import type { Principal } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import { isPermission, roleHasPermission, type OrganizationRole } from './permissions.ts';

/** Where access decisions read memberships and tenants from. */
export interface Memberships {
  /** The caller's role in the organization, or null when not a member. */
  roleIn(userId: string, organizationId: string): Promise<OrganizationRole | null>;
  /** The organization that owns a workspace, or null when there is no such workspace. */
  workspaceOrganization(workspaceId: string): Promise<string | null>;
}

export async function enforceAccess(access: Access, input: Record<string, unknown>, principal: Principal | null, memberships: Memberships): Promise<void> {
  if (access === 'public') return;
  if (!principal) throw new ApiError('UNAUTHORIZED');
  if (access === 'session') return;
  if (access === 'platform-admin') {
    if (principal.role !== 'admin') throw new ApiError('FORBIDDEN');
    return;
  }
  if (access.tenant === 'row') return; // the handler loads the row, then calls authorizeRow
  let organizationId: string | null;
  if (access.tenant === 'organizationId') {
    organizationId = typeof input.organizationId === 'string' ? input.organizationId : null;
    if (organizationId === null && access.optional) return;
  } else {
    organizationId = await memberships.workspaceOrganization(String(input.workspaceId));
    if (organizationId === null) throw new ApiError('NOT_FOUND', { message: 'Workspace not found.' });
  }
  if (organizationId === null) throw new ApiError('FORBIDDEN');
  await authorize(principal, organizationId, access.permission, memberships);
}

/**
 * By-id procedures: after loading a row, check the caller against the row's organization (403
 * across tenants). Answers the caller's role there, for rules finer than the matrix.
 */
export async function authorizeRow(principal: Principal | null, organizationId: string, permission: string, memberships: Memberships): Promise<OrganizationRole> {
  if (!principal) throw new ApiError('UNAUTHORIZED');
  return authorize(principal, organizationId, permission, memberships);
}

async function authorize(principal: Principal, organizationId: string, permission: string | undefined, memberships: Memberships): Promise<OrganizationRole> {
  const role = await memberships.roleIn(principal.userId, organizationId);
  if (role === null) throw new ApiError('FORBIDDEN');
  if (permission === undefined) return role;
  if (!isPermission(permission)) throw new Error(`the contract names an unknown permission: ${permission}`);
  if (!roleHasPermission(role, permission)) throw new ApiError('FORBIDDEN');
  return role;
}

/**
 * The rules about who may change whose membership, checked inside the transaction that makes the
 * change, against member rows it has locked (lockMembers, members-store.ts): two owners demoting
 * each other at the same moment serialize on the locks, and the second one sees the first one's
 * result.
 */
import { roleHasPermission, type OrganizationRole, type Permission } from '../auth/permissions.ts';
import type { Principal } from '../auth/principal.ts';
import { ApiError } from '../contract/errors.ts';
import type { MemberRow } from './members-store.ts';

/**
 * The caller's role among the locked rows, re-checked against the permission the contract declares
 * (ctx.tenant.permission): the binding layer checked it before the transaction, but a concurrent
 * change may have demoted or removed the caller since.
 */
export function callerRole(rows: MemberRow[], principal: Principal, permission: Permission | undefined): OrganizationRole {
  const role = rows.find((row) => row.userId === principal.userId)?.role;
  if (!role || (permission && !roleHasPermission(role, permission))) throw new ApiError('FORBIDDEN');
  return role;
}

/** Only an owner acts on an owner, or makes someone an owner. */
export function assertMayActOn(actor: OrganizationRole, targetRole: OrganizationRole, newRole?: OrganizationRole): void {
  if (actor !== 'owner' && (targetRole === 'owner' || newRole === 'owner')) {
    throw new ApiError('FORBIDDEN', { message: 'Only an owner can change, remove or appoint owners.' });
  }
}

/** An organization always keeps an owner: the last one cannot be removed, demoted or leave. */
export function assertOwnerRemains(rows: MemberRow[], target: MemberRow, newRole: OrganizationRole | null): void {
  if (target.role !== 'owner' || newRole === 'owner') return;
  const owners = rows.filter((row) => row.role === 'owner').length;
  if (owners <= 1) {
    throw new ApiError('CONFLICT', { message: 'The organization must keep at least one owner: make another member owner first, or delete the organization.' });
  }
}

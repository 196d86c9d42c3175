/**
 * The rules about who may change whose membership, checked inside the transaction that makes the
 * change, against member rows it has locked: two owners demoting each other at the same moment
 * serialize on the locks, and the second one sees the first one's result.
 */
import type { TransactionSql } from 'postgres';
import { roleHasPermission, type OrganizationRole, type Permission } from '../auth/permissions.ts';
import type { Principal } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import type { MemberRow } from './store.ts';

/**
 * Locks every membership of the organization (in id order, so concurrent lockers cannot deadlock)
 * and answers them with their users. Every change to roles or membership takes these locks first.
 */
export async function lockMembers(tx: TransactionSql, organizationId: string): Promise<MemberRow[]> {
  return tx<MemberRow[]>`
    select m.id, m.organization_id, m.user_id, m.role, m.created_at, u.email, u.name, u.image
    from members m join users u on u.id = m.user_id
    where m.organization_id = ${organizationId}
    order by m.id
    for update of m`;
}

/**
 * The caller's role among the locked rows, re-checked against the permission the contract declares
 * (ctx.tenant.permission): the binding layer checked it before the transaction, but a concurrent
 * change may have demoted or removed the caller since.
 */
export function callerRole(rows: MemberRow[], principal: Principal, permission: Permission | undefined): OrganizationRole {
  const role = rows.find((row) => row.user_id === principal.userId)?.role;
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

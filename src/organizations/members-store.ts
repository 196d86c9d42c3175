/**
 * The members table: the only module that writes it, and where its rows become camelCase; and their
 * mapping to the contract's Member.
 */
import type { AuthRouteOutput } from '../../generated/auth-routes.ts';
import type { Db } from '../db/db.ts';
import { announceRevocation } from '../auth/revocations.ts';
import { LIVE_SUBSCRIPTION } from '../billing/subscriptions-store.ts';

export type Member = AuthRouteOutput<'auth.organization.updateMemberRole'>;
/** The contract's member roles (the same as auth/permissions.ts's `roles`). */
export type OrganizationRole = Member['role'];

export interface MemberRow {
  id: string;
  organizationId: string;
  userId: string;
  role: OrganizationRole;
  createdAt: Date;
  email: string;
  name: string;
  image: string | null;
}

// A member with their user's address, name and image, camelCase (`m`: members, `u`: users).
const MEMBER_COLUMNS = 'm.id, m.organization_id as "organizationId", m.user_id as "userId", m.role, m.created_at as "createdAt", u.email, u.name, u.image';

export function toMember(row: MemberRow): Member {
  return {
    id: row.id,
    organizationId: row.organizationId,
    userId: row.userId,
    role: row.role,
    createdAt: row.createdAt,
    user: { id: row.userId, email: row.email, name: row.name, image: row.image },
  };
}

/** Every member with their user, oldest first (ties broken by id so pages are stable). */
export async function membersOf(db: Db, organizationId: string, page?: { limit: number; offset: number }): Promise<MemberRow[]> {
  return db<MemberRow[]>`
    select ${db.unsafe(MEMBER_COLUMNS)}
    from members m join users u on u.id = m.user_id
    where m.organization_id = ${organizationId}
    order by m.created_at, m.id
    ${page ? db`limit ${page.limit} offset ${page.offset}` : db``}`;
}

export async function countMembers(db: Db, organizationId: string): Promise<number> {
  const [count] = await db<{ total: number }[]>`select count(*)::int as total from members where organization_id = ${organizationId}`;
  return count!.total;
}

export async function findMember(db: Db, memberId: string): Promise<MemberRow | null> {
  const [row] = await db<MemberRow[]>`
    select ${db.unsafe(MEMBER_COLUMNS)}
    from members m join users u on u.id = m.user_id
    where m.id = ${memberId}`;
  return row ?? null;
}

/**
 * Locks every membership of the organization (`for update`, in id order, so concurrent lockers
 * cannot deadlock) and answers them with their users. Every change to roles or membership takes
 * these locks first (member-guards.ts).
 */
export async function lockMembers(tx: Db, organizationId: string): Promise<MemberRow[]> {
  return tx<MemberRow[]>`
    select ${tx.unsafe(MEMBER_COLUMNS)}
    from members m join users u on u.id = m.user_id
    where m.organization_id = ${organizationId}
    order by m.id
    for update of m`;
}

/**
 * Share-locks the user's membership of the organization (`for share`: it cannot be removed before
 * the transaction ends); false when they are not a member.
 */
export async function shareLockMembership(tx: Db, organizationId: string, userId: string): Promise<boolean> {
  const [member] = await tx`select id from members where organization_id = ${organizationId} and user_id = ${userId} for share`;
  return member !== undefined;
}

export async function roleIn(db: Db, organizationId: string, userId: string): Promise<OrganizationRole | null> {
  const [row] = await db<{ role: OrganizationRole }[]>`select role from members where organization_id = ${organizationId} and user_id = ${userId}`;
  return row?.role ?? null;
}

/** The creator of an organization becomes its first owner. */
export async function insertOwner(tx: Db, row: { id: string; organizationId: string; userId: string; now: Date }): Promise<void> {
  await tx`insert into members (id, organization_id, user_id, role, created_at) values (${row.id}, ${row.organizationId}, ${row.userId}, 'owner', ${row.now})`;
}

/** Inserts the membership; false when the user already is a member (`on conflict do nothing`). */
export async function insertMemberUnlessPresent(tx: Db, row: { id: string; organizationId: string; userId: string; role: OrganizationRole; now: Date }): Promise<boolean> {
  const [added] = await tx`
    insert into members (id, organization_id, user_id, role, created_at)
    values (${row.id}, ${row.organizationId}, ${row.userId}, ${row.role}, ${row.now})
    on conflict (organization_id, user_id) do nothing returning id`;
  return added !== undefined;
}

/** Changes the role; the member's open streams re-check their access at once (auth/revocations.ts). */
export async function setMemberRole(tx: Db, memberId: string, role: OrganizationRole): Promise<void> {
  const [member] = await tx<{ organizationId: string; userId: string }[]>`
    update members set role = ${role} where id = ${memberId} returning organization_id as "organizationId", user_id as "userId"`;
  if (member) await announceRevocation(tx, { kind: 'member', organizationId: member.organizationId, userId: member.userId });
}

/**
 * Deletes the membership only: removeFromTeamsOf (teams-store.ts) ends the user's team memberships.
 * The member's open streams of the organization end at once (auth/revocations.ts).
 */
export async function deleteMember(tx: Db, memberId: string): Promise<void> {
  const [member] = await tx<{ organizationId: string; userId: string }[]>`
    delete from members where id = ${memberId} returning organization_id as "organizationId", user_id as "userId"`;
  if (member) await announceRevocation(tx, { kind: 'member', organizationId: member.organizationId, userId: member.userId });
}

/**
 * The organization's first owner: the owner who has been a member longest (ties broken by id), or
 * null when it has none left (its last owner's user was deleted). Who pays for an organization
 * without a subscription (payer.ts).
 */
export async function firstOwnerOf(db: Db, organizationId: string): Promise<string | null> {
  const [row] = await db<{ userId: string }[]>`
    select user_id as "userId" from members where organization_id = ${organizationId} and role = 'owner'
    order by created_at, id limit 1`;
  return row?.userId ?? null;
}

const FREE_ORGANIZATIONS_LOCK = 731_044_209;

/**
 * Takes the lock on `userId`'s free organizations until `tx` ends: a charge against their shared
 * allowance (credit-ledger.ts) and a create counting them against the cap (routes.ts) take turns.
 */
export async function lockFreeOrganizationsOf(tx: Db, userId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(${FREE_ORGANIZATIONS_LOCK}::int, hashtext(${userId}))`;
}

/**
 * The organizations without a live subscription whose first owner is `userId`, oldest first: they
 * share one free allowance of AI credits (credit-ledger.ts) and one cap on how many there may be
 * (organizations/routes.ts).
 */
export async function freeOrganizationsOwnedBy(db: Db, userId: string): Promise<string[]> {
  const rows = await db<{ organizationId: string }[]>`
    select m.organization_id as "organizationId" from members m
    where m.user_id = ${userId} and m.role = 'owner'
      and not exists (select 1 from members e where e.organization_id = m.organization_id and e.role = 'owner' and (e.created_at, e.id) < (m.created_at, m.id))
      and not exists (select 1 from subscriptions s where s.organization_id = m.organization_id and s.status in ${db(LIVE_SUBSCRIPTION)})
    order by m.created_at, m.organization_id`;
  return rows.map((row) => row.organizationId);
}

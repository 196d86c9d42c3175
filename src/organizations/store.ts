/**
 * Rows of organizations, members, invitations and teams, the queries the identity routes share,
 * and their mapping to the contract's shapes (snake_case columns in, camelCase answers out).
 */
import type { TransactionSql } from 'postgres';
import type { Sql } from '../db/connection.ts';
import type { AuthRouteOutput } from '../../generated/auth-routes.ts';
import type { OrganizationRole } from '../auth/permissions.ts';
import type { Resource } from '../resources.ts';

/** The pool or a transaction: reads that happen inside a change go through its transaction. */
export type Db = Sql | TransactionSql;

export type Organization = AuthRouteOutput<'auth.organization.update'>;
export type Member = AuthRouteOutput<'auth.organization.updateMemberRole'>;
export type Invitation = AuthRouteOutput<'auth.organization.cancelInvitation'>;
export type Team = AuthRouteOutput<'auth.organization.createTeam'>;

export interface OrganizationRow {
  id: string;
  name: string;
  slug: string;
  logo: string | null;
  metadata: Record<string, unknown> | null;
  created_at: Date;
}

export interface MemberRow {
  id: string;
  organization_id: string;
  user_id: string;
  role: OrganizationRole;
  created_at: Date;
  email: string;
  name: string;
  image: string | null;
}

export interface InvitationRow {
  id: string;
  organization_id: string;
  email: string;
  role: OrganizationRole;
  team_id: string | null;
  status: 'pending' | 'accepted' | 'rejected' | 'canceled';
  inviter_id: string | null;
  expires_at: Date;
  created_at: Date;
}

export interface TeamRow {
  id: string;
  organization_id: string;
  name: string;
  created_at: Date;
  updated_at: Date;
}

export function toOrganization(row: OrganizationRow): Organization {
  return { id: row.id, name: row.name, slug: row.slug, logo: row.logo, metadata: row.metadata, createdAt: row.created_at };
}

export function toMember(row: MemberRow): Member {
  return {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    role: row.role,
    createdAt: row.created_at,
    user: { id: row.user_id, email: row.email, name: row.name, image: row.image },
  };
}

export function toInvitation(row: InvitationRow): Invitation {
  return {
    id: row.id,
    organizationId: row.organization_id,
    email: row.email,
    role: row.role,
    teamId: row.team_id,
    status: row.status,
    inviterId: row.inviter_id,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
  };
}

export function toTeam(row: TeamRow): Team {
  return { id: row.id, organizationId: row.organization_id, name: row.name, createdAt: row.created_at, updatedAt: row.updated_at };
}

export async function findOrganization(db: Db, id: string): Promise<OrganizationRow | null> {
  const [row] = await db<OrganizationRow[]>`select id, name, slug, logo, metadata, created_at from organizations where id = ${id}`;
  return row ?? null;
}

/** Every member with their user, oldest first (ties broken by id so pages are stable). */
export async function membersOf(db: Db, organizationId: string, page?: { limit: number; offset: number }): Promise<MemberRow[]> {
  return db<MemberRow[]>`
    select m.id, m.organization_id, m.user_id, m.role, m.created_at, u.email, u.name, u.image
    from members m join users u on u.id = m.user_id
    where m.organization_id = ${organizationId}
    order by m.created_at, m.id
    ${page ? db`limit ${page.limit} offset ${page.offset}` : db``}`;
}

export async function findMember(db: Db, memberId: string): Promise<MemberRow | null> {
  const [row] = await db<MemberRow[]>`
    select m.id, m.organization_id, m.user_id, m.role, m.created_at, u.email, u.name, u.image
    from members m join users u on u.id = m.user_id
    where m.id = ${memberId}`;
  return row ?? null;
}

export const invitationColumns = ['id', 'organization_id', 'email', 'role', 'team_id', 'status', 'inviter_id', 'expires_at', 'created_at'];

export async function findInvitation(db: Db, id: string, options: { lock?: boolean } = {}): Promise<InvitationRow | null> {
  const [row] = await db<InvitationRow[]>`
    select ${db(invitationColumns)} from invitations where id = ${id} ${options.lock ? db`for update` : db``}`;
  return row ?? null;
}

/** The loader of `resource: invitation` routes (src/resources.ts). */
export const invitationResource: Resource<InvitationRow> = {
  load: (sql, id) => findInvitation(sql, id),
  organizationOf: (invitation) => invitation.organization_id,
  notFound: 'No such invitation.',
};

export async function setInvitationStatus(db: Db, id: string, status: InvitationRow['status'], now: Date): Promise<InvitationRow> {
  const [row] = await db<InvitationRow[]>`
    update invitations set status = ${status}, updated_at = ${now} where id = ${id} returning ${db(invitationColumns)}`;
  return row!;
}

export async function pendingInvitationsOf(db: Db, organizationId: string): Promise<InvitationRow[]> {
  return db<InvitationRow[]>`
    select ${db(invitationColumns)} from invitations
    where organization_id = ${organizationId} and status = 'pending'
    order by created_at desc, id desc`;
}

export const teamColumns = ['id', 'organization_id', 'name', 'created_at', 'updated_at'];

export async function findTeam(db: Db, id: string): Promise<TeamRow | null> {
  const [row] = await db<TeamRow[]>`select ${db(teamColumns)} from teams where id = ${id}`;
  return row ?? null;
}

/** The loader of `resource: team` routes (src/resources.ts). */
export const teamResource: Resource<TeamRow> = {
  load: (sql, id) => findTeam(sql, id),
  organizationOf: (team) => team.organization_id,
  notFound: 'No such team.',
};

export async function teamsOf(db: Db, organizationId: string): Promise<TeamRow[]> {
  return db<TeamRow[]>`
    select ${db(teamColumns)} from teams where organization_id = ${organizationId} order by created_at, id`;
}

/** Ends a user's memberships of every team of the organization (on removal or leaving). */
export async function removeFromTeamsOf(db: Db, organizationId: string, userId: string): Promise<void> {
  await db`delete from team_members where user_id = ${userId} and team_id in (select id from teams where organization_id = ${organizationId})`;
}

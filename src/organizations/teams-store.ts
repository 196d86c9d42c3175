/**
 * The teams and team_members tables (team-routes.ts): the only module that writes them, and where
 * their rows become camelCase; and their mapping to the contract's Team and TeamMember.
 */
import type { AuthRouteOutput } from '../../generated/auth-routes.ts';
import type { Db } from '../db/db.ts';
import type { Resource } from '../db/resource.ts';

export type Team = AuthRouteOutput<'auth.organization.createTeam'>;
export type TeamMember = AuthRouteOutput<'auth.organization.addTeamMember'>;

export interface TeamRow {
  id: string;
  organizationId: string;
  name: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface TeamMemberRow {
  id: string;
  teamId: string;
  userId: string;
  createdAt: Date;
}

// Every column, camelCase. Constant lists, so `unsafe` injects nothing from outside.
const TEAM_COLUMNS = 'id, organization_id as "organizationId", name, created_at as "createdAt", updated_at as "updatedAt"';
const TEAM_MEMBER_COLUMNS = 'id, team_id as "teamId", user_id as "userId", created_at as "createdAt"';

export function toTeam(row: TeamRow): Team {
  return { id: row.id, organizationId: row.organizationId, name: row.name, createdAt: row.createdAt, updatedAt: row.updatedAt };
}

export function toTeamMember(row: TeamMemberRow): TeamMember {
  return { id: row.id, teamId: row.teamId, userId: row.userId, createdAt: row.createdAt };
}

export async function findTeam(db: Db, id: string): Promise<TeamRow | null> {
  const [row] = await db<TeamRow[]>`select ${db.unsafe(TEAM_COLUMNS)} from teams where id = ${id}`;
  return row ?? null;
}

/** The loader of `resource: team` routes (src/composition/resources.ts). */
export const teamResource: Resource<TeamRow> = {
  load: (sql, id) => findTeam(sql, id),
  organizationOf: (team) => team.organizationId,
  notFound: 'No such team.',
};

/** Whether the team exists and belongs to the organization (a workspace's team must). */
export async function teamInOrganization(db: Db, teamId: string, organizationId: string): Promise<boolean> {
  const [row] = await db`select 1 from teams where id = ${teamId} and organization_id = ${organizationId}`;
  return row !== undefined;
}

export async function teamsOf(db: Db, organizationId: string): Promise<TeamRow[]> {
  return db<TeamRow[]>`
    select ${db.unsafe(TEAM_COLUMNS)} from teams where organization_id = ${organizationId} order by created_at, id`;
}

/** Share-locks the team (`for share`: it cannot be deleted before the transaction ends); false when it is gone. */
export async function shareLockTeam(tx: Db, id: string): Promise<boolean> {
  const [team] = await tx`select id from teams where id = ${id} for share`;
  return team !== undefined;
}

export async function insertTeam(tx: Db, row: { id: string; organizationId: string; name: string; now: Date }): Promise<TeamRow> {
  const [team] = await tx<TeamRow[]>`
    insert into teams (id, organization_id, name, created_at, updated_at) values (${row.id}, ${row.organizationId}, ${row.name}, ${row.now}, ${row.now})
    returning ${tx.unsafe(TEAM_COLUMNS)}`;
  return team!;
}

/** The renamed team, or null when it is gone. */
export async function renameTeam(tx: Db, id: string, name: string, now: Date): Promise<TeamRow | null> {
  const [team] = await tx<TeamRow[]>`update teams set name = ${name}, updated_at = ${now} where id = ${id} returning ${tx.unsafe(TEAM_COLUMNS)}`;
  return team ?? null;
}

/**
 * Deletes the team and answers it, or null when it was already gone. The foreign keys do the rest:
 * its team memberships go, and its workspaces and pending invitations stay with team_id set to null
 * (`on delete set null`).
 */
export async function deleteTeam(tx: Db, id: string): Promise<TeamRow | null> {
  const [team] = await tx<TeamRow[]>`delete from teams where id = ${id} returning ${tx.unsafe(TEAM_COLUMNS)}`;
  return team ?? null;
}

/** Adds the user to the team; null when they already are in it. */
export async function insertTeamMember(tx: Db, row: { id: string; teamId: string; userId: string; now: Date }): Promise<TeamMemberRow | null> {
  const [added] = await tx<TeamMemberRow[]>`
    insert into team_members (id, team_id, user_id, created_at) values (${row.id}, ${row.teamId}, ${row.userId}, ${row.now})
    on conflict (team_id, user_id) do nothing
    returning ${tx.unsafe(TEAM_MEMBER_COLUMNS)}`;
  return added ?? null;
}

/** Adds the user to the team unless already there (`on conflict do nothing`, whichever constraint). */
export async function ensureTeamMember(tx: Db, row: { id: string; teamId: string; userId: string; now: Date }): Promise<void> {
  await tx`insert into team_members (id, team_id, user_id, created_at) values (${row.id}, ${row.teamId}, ${row.userId}, ${row.now}) on conflict do nothing`;
}

/** Removes the user from the team and answers the team membership's id, or null when they were not in it. */
export async function deleteTeamMember(tx: Db, teamId: string, userId: string): Promise<string | null> {
  const [removed] = await tx<{ id: string }[]>`delete from team_members where team_id = ${teamId} and user_id = ${userId} returning id`;
  return removed?.id ?? null;
}

/** Ends a user's memberships of every team of the organization (on removal or leaving). */
export async function removeFromTeamsOf(db: Db, organizationId: string, userId: string): Promise<void> {
  await db`delete from team_members where user_id = ${userId} and team_id in (select id from teams where organization_id = ${organizationId})`;
}

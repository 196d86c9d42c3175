/**
 * Identity routes: teams and team members. Routes addressed by a teamId (x-access tenant: row,
 * resource: team) get the team in ctx.row, already authorized against its organization.
 */
import { type AuthHandlers, signedIn } from '../context.ts';
import { writeAudit } from '../audit/store.ts';
import { ApiError } from '../contract/errors.ts';
import { newId } from '../ids.ts';
import { shareLockMembership } from './members-store.ts';
import { deleteTeam, deleteTeamMember, insertTeam, insertTeamMember, renameTeam, shareLockTeam, teamsOf, toTeam, toTeamMember } from './teams-store.ts';

export const teamRoutes = {
  async 'auth.organization.createTeam'(input, ctx) {
    const principal = signedIn(ctx);
    const now = ctx.services.now();
    const body = await ctx.services.db.sql.begin(async (tx) => {
      const team = await insertTeam(tx, { id: newId('team'), organizationId: input.organizationId, name: input.name, now });
      await writeAudit(tx, { organizationId: input.organizationId, action: 'team.created', actor: principal, targetType: 'team', targetId: team.id, metadata: { name: team.name } }, now);
      return toTeam(team);
    });
    return { body };
  },

  async 'auth.organization.updateTeam'(input, ctx) {
    const principal = signedIn(ctx);
    const found = ctx.row;
    if (found.name === input.data.name) return { body: toTeam(found) };
    const now = ctx.services.now();
    const body = await ctx.services.db.sql.begin(async (tx) => {
      const team = await renameTeam(tx, found.id, input.data.name, now);
      if (!team) throw new ApiError('NOT_FOUND', { message: 'No such team.' }); // deleted meanwhile
      await writeAudit(tx, { organizationId: team.organizationId, action: 'team.updated', actor: principal, targetType: 'team', targetId: team.id, metadata: { from: found.name, to: team.name } }, now);
      return toTeam(team);
    });
    return { body };
  },

  async 'auth.organization.removeTeam'(input, ctx) {
    const principal = signedIn(ctx);
    // The caller named the organization too: a team of another one is not in it.
    if (ctx.row.organizationId !== input.organizationId) throw new ApiError('NOT_FOUND', { message: 'No such team in this organization.' });
    const now = ctx.services.now();
    await ctx.services.db.sql.begin(async (tx) => {
      // The foreign keys do the rest: its team memberships go, and its workspaces and pending
      // invitations stay with team_id set to null (`on delete set null`).
      const team = await deleteTeam(tx, ctx.row.id);
      if (!team) throw new ApiError('NOT_FOUND', { message: 'No such team in this organization.' }); // deleted meanwhile
      await writeAudit(tx, { organizationId: team.organizationId, action: 'team.deleted', actor: principal, targetType: 'team', targetId: team.id, metadata: { name: team.name } }, now);
    });
    return { body: { id: input.teamId } };
  },

  async 'auth.organization.listTeams'(input, ctx) {
    const teams = await teamsOf(ctx.services.db.sql, input.organizationId);
    return { body: teams.map(toTeam) };
  },

  async 'auth.organization.addTeamMember'(input, ctx) {
    const principal = signedIn(ctx);
    const found = ctx.row;
    const now = ctx.services.now();
    const body = await ctx.services.db.sql.begin(async (tx) => {
      // Share locks: neither the team nor the user's membership may go away before this commits
      // (a removal deletes the user's team memberships, and would miss this one).
      if (!(await shareLockTeam(tx, found.id))) throw new ApiError('NOT_FOUND', { message: 'No such team.' });
      if (!(await shareLockMembership(tx, found.organizationId, input.userId))) throw new ApiError('NOT_FOUND', { message: "This user is not a member of the team's organization." });
      const added = await insertTeamMember(tx, { id: newId('tm'), teamId: found.id, userId: input.userId, now });
      if (!added) throw new ApiError('CONFLICT', { message: 'This user is already in the team.' });
      await writeAudit(
        tx,
        { organizationId: found.organizationId, action: 'team.member_added', actor: principal, targetType: 'team', targetId: found.id, metadata: { userId: input.userId, teamMemberId: added.id } },
        now,
      );
      return toTeamMember(added);
    });
    return { body };
  },

  async 'auth.organization.removeTeamMember'(input, ctx) {
    const principal = signedIn(ctx);
    const found = ctx.row;
    const now = ctx.services.now();
    await ctx.services.db.sql.begin(async (tx) => {
      const removedId = await deleteTeamMember(tx, found.id, input.userId);
      if (!removedId) throw new ApiError('NOT_FOUND', { message: 'This user is not in the team.' });
      await writeAudit(
        tx,
        { organizationId: found.organizationId, action: 'team.member_removed', actor: principal, targetType: 'team', targetId: found.id, metadata: { userId: input.userId, teamMemberId: removedId } },
        now,
      );
    });
    return { body: { status: true as const } };
  },
} satisfies AuthHandlers;

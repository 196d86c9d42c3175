/** workspaces.list, get, create, update, delete. */
import type { Context, Handlers } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import { newId } from '../ids.ts';
import { objectDeletion } from '../storage/delete-objects.ts';
import { isUniqueViolation } from '../db/errors.ts';
import { teamInOrganization } from '../organizations/teams-store.ts';
import * as store from './store.ts';

async function assertTeam(ctx: Context<unknown>, teamId: string | null | undefined, organizationId: string): Promise<void> {
  if (teamId && !(await teamInOrganization(ctx.services.db.sql, teamId, organizationId))) {
    throw new ApiError('NOT_FOUND', { message: 'Team not found in this organization.' });
  }
}

const slugTaken = () => new ApiError('CONFLICT', { message: 'This slug is taken in the organization.' });

export const workspaceProcedures = {
  'workspaces.list': (input, ctx) => store.listWorkspaces(ctx.services.db.sql, input.organizationId),

  'workspaces.get': async (input, ctx) => {
    const { sql } = ctx.services.db;
    const workspace = await store.findWorkspaceBySlug(sql, input.organizationId, input.slug);
    if (!workspace) throw new ApiError('NOT_FOUND', { message: 'Workspace not found.' });
    const plan = await ctx.services.plans.limitsFor(workspace.organizationId);
    return { ...workspace, storage: { usedBytes: await store.workspaceUsage(sql, workspace.id), limitBytes: plan?.limits.storageBytes ?? null } };
  },

  'workspaces.create': async (input, ctx) => {
    await assertTeam(ctx, input.teamId, input.organizationId);
    const plan = await ctx.services.plans.limitsFor(input.organizationId);
    try {
      const created = await store.insertWorkspace(ctx.services.db.sql, {
        id: newId('ws'),
        organizationId: input.organizationId,
        teamId: input.teamId ?? null,
        name: input.name,
        slug: input.slug,
        now: ctx.services.now(),
        limit: plan?.limits.workspaces ?? null,
      });
      if (created) return created;
    } catch (error) {
      if (isUniqueViolation(error, store.SLUG_CONSTRAINT)) throw slugTaken();
      throw error;
    }
    throw new ApiError('LIMIT_REACHED', {
      message: `Your plan allows ${plan!.limits.workspaces} workspaces.`,
      data: { kind: 'workspaces', limit: plan!.limits.workspaces, plan: plan!.plan },
    });
  },

  'workspaces.update': async (input, ctx) => {
    const workspace = ctx.row;
    await assertTeam(ctx, input.teamId, workspace.organizationId);
    try {
      return await store.updateWorkspace(ctx.services.db.sql, workspace.id, input, ctx.services.now());
    } catch (error) {
      if (isUniqueViolation(error, store.SLUG_CONSTRAINT)) throw slugTaken();
      throw error;
    }
  },

  'workspaces.delete': async (_input, ctx) => {
    const workspace = ctx.row;
    const { sql } = ctx.services.db;
    // The objects first: while the storage is down this answers 503 and the workspace stays, whole,
    // for a retry. Then the rows, and the objects again for an upload completed meanwhile.
    const objects = objectDeletion(ctx.services.storage, ctx.log, { workspaceId: workspace.id });
    await objects.beforeRows(await store.documentKeys(sql, workspace.id));
    await objects.afterRows(await store.deleteWorkspace(sql, workspace.id));
    return { id: workspace.id };
  },
} satisfies Handlers;

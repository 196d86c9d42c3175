/**
 * Identity routes: organizations (auth.organization.create ... getFullOrganization), plus the
 * member and invitation routes gathered from their own modules. Access (x-access) is checked by
 * the identity router before a handler runs; the handlers add the rules the matrix cannot say.
 */
import { isDeepStrictEqual } from 'node:util';
import { type AuthHandlers, signedIn } from '../context.ts';
import { writeAudit } from '../audit/store.ts';
import { ApiError } from '../contract/errors.ts';
import { isUniqueViolation } from '../db/errors.ts';
import { newId } from '../ids.ts';
import { invitationRoutes } from './invitation-routes.ts';
import { pendingInvitationsOf, toInvitation } from './invitations-store.ts';
import { memberRoutes } from './member-routes.ts';
import { freeOrganizationsOwnedBy, insertOwner, lockFreeOrganizationsOf, membersOf, toMember } from './members-store.ts';
import { deleteOrganizationEverywhere } from './delete-organization.ts';
import { findOrganization, insertOrganization, lockOrganization, organizationsOfUser, toOrganization, updateOrganization } from './store.ts';
import { teamsOf, toTeam } from './teams-store.ts';

const SLUG_TAKEN = 'This slug is already used by another organization.';

const organizationCrud = {
  async 'auth.organization.create'(input, ctx) {
    const principal = signedIn(ctx);
    const now = ctx.services.now();
    const cap = ctx.services.config.billing?.maxFreeOrganizationsPerUser;
    const body = await ctx.services.db.sql.begin(async (tx) => {
      if (cap !== undefined) {
        // Organizations cost nothing: a user's free ones are capped (and share one allowance of
        // credits and one place in the job queue: payer.ts). Counted under the user's lock, so
        // creates at once cannot both take the last place.
        await lockFreeOrganizationsOf(tx, principal.userId);
        const owned = (await freeOrganizationsOwnedBy(tx, principal.userId)).length;
        if (owned >= cap) {
          throw new ApiError('LIMIT_REACHED', {
            message: `You own ${owned} organizations on the free plan, the most one user may; subscribe one of them to a paid plan, or delete one, first.`,
            data: { kind: 'organizations', limit: cap, plan: 'free' },
          });
        }
      }
      const id = newId('org');
      const organization = await insertOrganization(tx, { id, name: input.name, slug: input.slug, now });
      if (!organization) throw new ApiError('CONFLICT', { message: SLUG_TAKEN });
      const memberId = newId('mem');
      await insertOwner(tx, { id: memberId, organizationId: id, userId: principal.userId, now });
      await writeAudit(tx, { organizationId: id, action: 'organization.created', actor: principal, targetType: 'organization', targetId: id, metadata: { name: input.name, slug: input.slug } }, now);
      await writeAudit(tx, { organizationId: id, action: 'member.added', actor: principal, targetType: 'member', targetId: memberId, metadata: { userId: principal.userId, role: 'owner' } }, now);
      const members = await membersOf(tx, id);
      return { ...toOrganization(organization), members: members.map(toMember) };
    });
    return { body };
  },

  async 'auth.organization.update'(input, ctx) {
    const principal = signedIn(ctx);
    const now = ctx.services.now();
    try {
      const body = await ctx.services.db.sql.begin(async (tx) => {
        const current = await lockOrganization(tx, input.organizationId);
        if (!current) throw new ApiError('FORBIDDEN'); // deleted since the access check
        const next = { ...current };
        const changes: Record<string, { from: unknown; to: unknown }> = {};
        for (const field of ['name', 'slug', 'logo', 'metadata'] as const) {
          if (input.data[field] === undefined) continue;
          const value = input.data[field] ?? null;
          if (isDeepStrictEqual(current[field], value)) continue;
          changes[field] = { from: current[field], to: value };
          Object.assign(next, { [field]: value });
        }
        if (Object.keys(changes).length === 0) return toOrganization(current);
        const updated = await updateOrganization(tx, current.id, next, now);
        await writeAudit(tx, { organizationId: current.id, action: 'organization.updated', actor: principal, targetType: 'organization', targetId: current.id, metadata: { changes } }, now);
        return toOrganization(updated);
      });
      return { body };
    } catch (error) {
      if (isUniqueViolation(error, 'organizations_slug_key')) throw new ApiError('CONFLICT', { message: SLUG_TAKEN });
      throw error;
    }
  },

  async 'auth.organization.delete'(input, ctx) {
    const actor = signedIn(ctx);
    await deleteOrganizationEverywhere(ctx.services, ctx.log, { organizationId: input.organizationId, confirmSlug: input.confirmSlug, actor });
    return { body: { organizationId: input.organizationId } };
  },

  async 'auth.organization.list'(_input, ctx) {
    const principal = signedIn(ctx);
    const rows = await organizationsOfUser(ctx.services.db.sql, principal.userId);
    return { body: rows.map((row) => ({ ...toOrganization(row), role: row.role })) };
  },

  async 'auth.organization.getFullOrganization'(input, ctx) {
    // One snapshot, so members, invitations and teams agree with each other.
    const body = await ctx.services.db.sql.begin('isolation level repeatable read read only', async (tx) => {
      const organization = await findOrganization(tx, input.organizationId);
      if (!organization) throw new ApiError('FORBIDDEN'); // deleted since the access check
      const members = await membersOf(tx, organization.id);
      const invitations = await pendingInvitationsOf(tx, organization.id);
      const teams = await teamsOf(tx, organization.id);
      return { ...toOrganization(organization), members: members.map(toMember), invitations: invitations.map(toInvitation), teams: teams.map(toTeam) };
    });
    return { body };
  },
} satisfies AuthHandlers;

export const organizationRoutes = {
  ...organizationCrud,
  ...memberRoutes,
  ...invitationRoutes,
} satisfies AuthHandlers;

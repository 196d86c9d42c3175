/**
 * Identity routes: an organization's members (listMembers, removeMember, updateMemberRole, leave).
 * Every change locks the organization's member rows first (lockMembers), so the last-owner
 * guard and the "only owners touch owners" rule hold under concurrent requests.
 */
import type { Principal } from '../auth/principal.ts';
import { writeAudit } from '../audit/store.ts';
import { type Context, type AuthHandlers, signedIn } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import type { Db } from '../db/db.ts';
import { assertMayActOn, assertOwnerRemains, callerRole } from './member-guards.ts';
import { countMembers, deleteMember, lockMembers, membersOf, setMemberRole, toMember, type MemberRow, type OrganizationRole } from './members-store.ts';
import { removeFromTeamsOf } from './teams-store.ts';

interface LockedMembers {
  tx: Db;
  /** Every member of the organization, locked. */
  rows: MemberRow[];
  /** The caller's role among them, re-checked (callerRole). */
  actor: OrganizationRole;
  principal: Principal;
  now: Date;
}

/**
 * Runs a change of the organization's memberships in one transaction that first locks all its
 * member rows (lockMembers) and re-checks the caller's role among them (callerRole).
 */
async function changeMembers<T>(ctx: Context<unknown>, organizationId: string, change: (locked: LockedMembers) => Promise<T>): Promise<T> {
  const principal = signedIn(ctx);
  const now = ctx.services.now();
  return ctx.services.db.sql.begin(async (tx) => {
    const rows = await lockMembers(tx, organizationId);
    const actor = callerRole(rows, principal, ctx.tenant?.permission);
    return change({ tx, rows, actor, principal, now });
  }) as Promise<T>;
}

export const memberRoutes = {
  async 'auth.organization.listMembers'(input, ctx) {
    const { sql } = ctx.services.db;
    const members = await membersOf(sql, input.organizationId, { limit: input.limit ?? 50, offset: input.offset ?? 0 });
    const total = await countMembers(sql, input.organizationId);
    return { body: { members: members.map(toMember), total } };
  },

  async 'auth.organization.removeMember'(input, ctx) {
    const body = await changeMembers(ctx, input.organizationId, async ({ tx, rows, actor, principal, now }) => {
      const key = input.memberIdOrEmail;
      const target = rows.find((row) => row.id === key) ?? rows.find((row) => row.email.toLowerCase() === key.toLowerCase());
      if (!target) throw new ApiError('NOT_FOUND', { message: 'No member of this organization matches.' });
      assertMayActOn(actor, target.role);
      assertOwnerRemains(rows, target, null);
      await deleteMember(tx, target.id);
      await removeFromTeamsOf(tx, input.organizationId, target.userId);
      await writeAudit(
        tx,
        {
          organizationId: input.organizationId,
          action: 'member.removed',
          actor: principal,
          targetType: 'member',
          targetId: target.id,
          metadata: { userId: target.userId, email: target.email, role: target.role },
        },
        now,
      );
      return { member: toMember(target) };
    });
    return { body };
  },

  async 'auth.organization.updateMemberRole'(input, ctx) {
    const body = await changeMembers(ctx, input.organizationId, async ({ tx, rows, actor, principal, now }) => {
      const target = rows.find((row) => row.id === input.memberId);
      if (!target) throw new ApiError('NOT_FOUND', { message: 'No such member in this organization.' });
      assertMayActOn(actor, target.role, input.role);
      if (target.role === input.role) return toMember(target);
      assertOwnerRemains(rows, target, input.role);
      await setMemberRole(tx, target.id, input.role);
      await writeAudit(
        tx,
        {
          organizationId: input.organizationId,
          action: 'member.role_changed',
          actor: principal,
          targetType: 'member',
          targetId: target.id,
          metadata: { userId: target.userId, from: target.role, to: input.role },
        },
        now,
      );
      return toMember({ ...target, role: input.role });
    });
    return { body };
  },

  async 'auth.organization.leave'(input, ctx) {
    // changeMembers answers 403, like to any non-member, when the caller was removed meanwhile.
    const body = await changeMembers(ctx, input.organizationId, async ({ tx, rows, principal, now }) => {
      const self = rows.find((row) => row.userId === principal.userId)!;
      assertOwnerRemains(rows, self, null);
      await deleteMember(tx, self.id);
      await removeFromTeamsOf(tx, input.organizationId, self.userId);
      await writeAudit(
        tx,
        { organizationId: input.organizationId, action: 'member.left', actor: principal, targetType: 'member', targetId: self.id, metadata: { userId: self.userId, role: self.role } },
        now,
      );
      return toMember(self);
    });
    return { body };
  },
} satisfies AuthHandlers;

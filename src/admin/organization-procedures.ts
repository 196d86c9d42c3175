/**
 * The platform admin's organization procedures (admin.organizations.*). The binding layer has
 * already refused anyone but a platform admin and, for the by-id ones, loaded the organization
 * (404 when there is none) into ctx.row.
 */
import type { ProcedureOutput } from '../../generated/procedures.ts';
import type { Handlers } from '../context.ts';
import { isPlanName } from '../credits/plans.ts';
import { changeSubscription, liveAtStripe, billingSettings } from '../billing/subscription-changes.ts';
import { deleteOrganizationEverywhere } from '../organizations/delete-organization.ts';
import { pageOrganizations, type SummaryRow } from './organizations-store.ts';

type OrganizationSummary = ProcedureOutput<'admin.organizations.list'>['items'][number];

export const adminOrganizationProcedures = {
  'admin.organizations.list': async (input, ctx) => {
    const { rows, total } = await pageOrganizations(ctx.services.db.sql, { search: input.search, limit: input.limit ?? 25, offset: input.offset ?? 0 });
    const billed = ctx.services.config.billing !== null;
    return { items: rows.map((row) => toSummary(row, billed)), total };
  },

  'admin.organizations.cancelSubscription': async (input, ctx) => {
    billingSettings(ctx.services); // 412 before anything else: without billing there is nothing to cancel
    const live = await liveAtStripe(ctx.services, ctx.row.id);
    const row = await changeSubscription(ctx.services, ctx.principal!, live, input.immediately ? 'cancel-now' : 'cancel-at-period-end');
    return { status: row.status, cancelAtPeriodEnd: row.cancelAtPeriodEnd };
  },

  'admin.organizations.delete': async (input, ctx) => {
    const { deleted, failed } = await deleteOrganizationEverywhere(ctx.services, ctx.log, {
      organizationId: ctx.row.id,
      confirmSlug: input.confirmSlug,
      actor: ctx.principal!,
    });
    return { organizationId: ctx.row.id, objectsDeleted: deleted, objectsFailed: failed };
  },
} satisfies Handlers;

/** `billed`: whether billing is configured (otherwise there is no plan). */
function toSummary(row: SummaryRow, billed: boolean): OrganizationSummary {
  const live = row.subscriptionLive === true;
  const plan = !billed ? null : live && row.subscriptionPlan && isPlanName(row.subscriptionPlan) ? row.subscriptionPlan : 'free';
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    createdAt: row.createdAt,
    paymentCustomerId: row.paymentCustomerId,
    members: row.members,
    workspaces: row.workspaces,
    plan,
    seats: { billed: live ? row.seats : null, members: row.members },
    subscription:
      row.subscriptionId === null
        ? null
        : {
            id: row.subscriptionId,
            plan: row.subscriptionPlan!,
            status: row.subscriptionStatus!,
            seats: row.seats,
            periodEnd: row.periodEnd,
            cancelAtPeriodEnd: row.cancelAtPeriodEnd!,
            paymentSubscriptionId: row.paymentSubscriptionId,
          },
  };
}

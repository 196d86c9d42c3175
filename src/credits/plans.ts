/**
 * Plan limits (decisions.md, "Plans"). They are enforced only while billing is configured on the
 * deployment: without it there is no plan, the lookup answers null and every check passes. With
 * it, an organization without a live subscription is on free, else on its subscription's plan.
 * The period AI credits count in (calendarMonth, periodOf) is the ledger's (credit-ledger.ts).
 */
import type { Sql } from '../db/connection.ts';
import { liveSubscription } from '../billing/subscriptions-store.ts';
import { calendarMonth, type Period } from './credit-ledger.ts';
import type { ErrorData } from '../contract/errors.ts';
import type { components } from '../../generated/types.ts';

/**
 * The kinds a plan limits: the contract's (LIMIT_REACHED's `data.kind`), so a new kind is added
 * there first; but `organizations`, the deployment's cap on a user's free organizations
 * (MAX_FREE_ORGANIZATIONS_PER_USER), which no plan sets.
 */
export type LimitKind = Exclude<ErrorData['LIMIT_REACHED']['kind'], 'organizations'>;
/** The contract's plans (Plan, without the null of a deployment without billing). */
export type PlanName = NonNullable<components['schemas']['Plan']>;

export interface PlanLimits {
  plan: PlanName;
  limits: Record<LimitKind, number>;
  /** The billing period AI credits are counted in; the UTC calendar month when absent. */
  period?: Period;
}

export interface PlanLookup {
  /** The organization's plan and limits, or null when billing is not configured (no limits apply). */
  limitsFor(organizationId: string): Promise<PlanLimits | null>;
}

const GiB = 1024 ** 3;

/** decisions.md, "Plans". */
export const PLAN_LIMITS: Record<PlanName, Record<LimitKind, number>> = {
  free: { workspaces: 3, members: 5, aiCredits: 200, storageBytes: 1 * GiB },
  pro: { workspaces: 25, members: 25, aiCredits: 5_000, storageBytes: 50 * GiB },
  team: { workspaces: 100, members: 100, aiCredits: 25_000, storageBytes: 250 * GiB },
};

export function isPlanName(plan: string): plan is PlanName {
  return Object.hasOwn(PLAN_LIMITS, plan);
}

/** Billing is off: no plan, nothing enforced. */
export const unbilled: PlanLookup = {
  limitsFor: async () => null,
};

/**
 * Billing is on: the live subscription's plan and period, else free and the calendar month. A
 * subscription whose reported period is over (a renewal not yet reported) counts in the calendar
 * month until Stripe reports the next one.
 */
export function billedPlans(sql: Sql, now: () => Date): PlanLookup {
  return {
    async limitsFor(organizationId) {
      const subscription = await liveSubscription(sql, organizationId);
      const plan: PlanName = subscription && isPlanName(subscription.plan) ? subscription.plan : 'free';
      const at = now();
      const { periodStart: start, periodEnd: end } = subscription ?? {};
      const period = start && end && start <= at && at < end ? { start, end } : calendarMonth(at);
      return { plan, limits: PLAN_LIMITS[plan], period };
    },
  };
}

/**
 * What an organization uses of its plan (organizations.usage, billing.status): workspaces,
 * members, pending invitations and the AI credits of the period (on the free plan, those of every
 * free organization of its first owner: they share one allowance), counted in one snapshot. A
 * query module named for its report (architecture.md, "Stores"): it only reads, and the ledger's
 * balance comes from credit-ledger.ts.
 */
import type { Sql } from '../db/connection.ts';
import { allowanceSpent, periodOf, type Period } from './credit-ledger.ts';
import type { PlanLimits } from './plans.ts';
import type { components } from '../../generated/types.ts';

export interface UsageCounts {
  workspaces: number;
  members: number;
  /** Invitations that can still be accepted (pending and unexpired): each holds a seat. */
  pendingInvitations: number;
  aiCredits: number;
}

export async function usageOf(sql: Sql, organizationId: string, plan: PlanLimits | null, now: Date): Promise<{ usage: UsageCounts; period: Period }> {
  const period = periodOf(plan, now);
  const usage = await sql.begin('isolation level repeatable read read only', async (tx) => {
    const [counts] = await tx<Omit<UsageCounts, 'aiCredits'>[]>`
      select (select count(*) from workspaces where organization_id = ${organizationId})::int as workspaces,
             (select count(*) from members where organization_id = ${organizationId})::int as members,
             (select count(*) from invitations where organization_id = ${organizationId} and status = 'pending' and expires_at > ${now})::int as "pendingInvitations"`;
    return { ...counts!, aiCredits: Math.max(0, await allowanceSpent(tx, organizationId, plan, period.start)) };
  });
  return { usage, period };
}

/** The contract's OverLimit, so its kinds are listed once (openapi/components/schemas/OverLimit.yaml). */
export type OverLimit = components['schemas']['OverLimit'];

/** Every kind OverLimit names, in report order: tsc fails when this list and the contract's differ either way. */
const OVER_LIMIT_KINDS = ['workspaces', 'members', 'aiCredits'] as const satisfies readonly OverLimit['kind'][];
type Missing = Exclude<OverLimit['kind'], (typeof OVER_LIMIT_KINDS)[number]>;
const _everyKind: [Missing] extends [never] ? true : Missing = true;

/**
 * The limits usage is above (after a move to a smaller plan). Members count with the pending
 * invitations, as the member limit does; what exists is kept, only new ones are refused.
 */
export function overLimits(plan: PlanLimits | null, usage: UsageCounts): OverLimit[] {
  if (!plan) return [];
  const current = { workspaces: usage.workspaces, members: usage.members + usage.pendingInvitations, aiCredits: usage.aiCredits };
  return OVER_LIMIT_KINDS.filter((kind) => current[kind] > plan.limits[kind]).map((kind) => ({ kind, current: current[kind], limit: plan.limits[kind] }));
}

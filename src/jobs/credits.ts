/**
 * AI credits: a ledger of charges (positive) and refunds (negative) per organization. The credits
 * spent in a period are the sum of its rows. A charge runs inside the caller's transaction and
 * first locks the organization's row, so two concurrent charges cannot both fit in the last
 * credits (architecture.md: counters change only under a row lock or in one atomic statement).
 *
 * The period is the plan's (the live subscription's) when it has one, else the UTC calendar month.
 */
import type { Db } from '../db/db.ts';
import { periodOf, type PlanLimits } from '../billing/plans.ts';
import { ApiError } from '../contract/errors.ts';
import { newId } from '../ids.ts';

export type CreditReason = 'job.create' | 'job.retry' | 'job.cancel' | 'search';

export async function creditsSpent(sql: Db, organizationId: string, since: Date): Promise<number> {
  const [row] = await sql<{ spent: number }[]>`
    select coalesce(sum(amount), 0)::int as spent from credit_ledger
    where organization_id = ${organizationId} and created_at >= ${since}`;
  return row!.spent;
}

export interface Charge {
  organizationId: string;
  amount: number;
  reason: CreditReason;
  jobId: string | null;
  now: Date;
  /** The plan's limits, or null when nothing is enforced (billing not configured). */
  plan: PlanLimits | null;
}

/**
 * Records a charge inside `tx`, or throws 403 LIMIT_REACHED (kind aiCredits) when it would take
 * the period's spending past the plan's limit. Locks the organization row until `tx` ends.
 */
export async function charge(tx: Db, c: Charge): Promise<void> {
  if (c.plan) {
    await tx`select 1 from organizations where id = ${c.organizationId} for update`;
    const spent = await creditsSpent(tx, c.organizationId, periodOf(c.plan, c.now).start);
    const limit = c.plan.limits.aiCredits;
    if (spent + c.amount > limit) {
      throw new ApiError('LIMIT_REACHED', { data: { kind: 'aiCredits', limit, plan: c.plan.plan } });
    }
  }
  await record(tx, c);
}

/** A refund (jobs.cancel, a search whose query could not be embedded): never limited. */
export async function refund(tx: Db, c: Omit<Charge, 'plan'>): Promise<void> {
  await record(tx, { ...c, amount: -c.amount });
}

async function record(tx: Db, c: Omit<Charge, 'plan'>): Promise<void> {
  await tx`
    insert into credit_ledger (id, organization_id, job_id, amount, reason, created_at)
    values (${newId('crd')}, ${c.organizationId}, ${c.jobId}, ${c.amount}, ${c.reason}, ${c.now})`;
}

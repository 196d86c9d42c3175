/**
 * The AI credit ledger (credit_ledger): the only module that writes it. Charges are positive rows,
 * refunds negative, per organization. The credits spent in a period are the sum of the rows that
 * count in it (`counts_at`): a charge counts when it is made, a refund at the moment of the charge
 * it gives back (0009), so a cancel in a new period never lowers that period's spending.
 *
 * A charge against a plan runs inside the caller's transaction and first locks the organization's
 * row, so two concurrent charges cannot both fit in the last credits (architecture.md: counters
 * change only under a row lock or in one atomic statement). The lock is `for no key update`: it
 * excludes other chargers but not the key-share locks that foreign keys take on the row (every
 * insert of a row naming the organization: job events, ledger rows, jobs). With `for update` a
 * charger waiting for the job-event lock (events.ts) and a worker holding it while inserting an
 * event, whose foreign key wanted the organization row, deadlocked (issue 16).
 *
 * The period is the plan's (the live subscription's) when it has one, else the UTC calendar month.
 * The plans themselves are in plans.ts; what a job costs in pricing.ts; usage reports in usage.ts.
 */
import type { Db } from '../db/db.ts';
import { ApiError } from '../contract/errors.ts';
import { newId } from '../ids.ts';
import { lockOrganization } from '../organizations/store.ts';

export type CreditReason = 'job.create' | 'job.retry' | 'job.cancel' | 'search';

export interface Period {
  start: Date;
  end: Date;
}

/**
 * What a charge is checked against: the plan's name, its AI credits and the period they count in
 * (the UTC calendar month when absent). A plan's limits (plans.ts PlanLimits) are one.
 */
export interface CreditAllowance {
  plan: string;
  limits: { aiCredits: number };
  period?: Period;
}

/** The UTC calendar month `now` falls in: the period of an organization without a live subscription. */
export function calendarMonth(now: Date): Period {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}

/** The period credits are counted in: the plan's, else the calendar month. */
export function periodOf(plan: CreditAllowance | null, now: Date): Period {
  return plan?.period ?? calendarMonth(now);
}

/** The organization's balance of the ledger since `since`: charges minus refunds that count from then on. */
export async function creditsSpent(sql: Db, organizationId: string, since: Date): Promise<number> {
  const [row] = await sql<{ spent: number }[]>`
    select coalesce(sum(amount), 0)::int as spent from credit_ledger
    where organization_id = ${organizationId} and counts_at >= ${since}`;
  return row!.spent;
}

export interface Charge {
  organizationId: string;
  amount: number;
  reason: CreditReason;
  jobId: string | null;
  now: Date;
  /** The plan's limits, or null when nothing is enforced (billing not configured). */
  plan: CreditAllowance | null;
}

/**
 * Records a charge inside `tx`, or throws 403 LIMIT_REACHED (kind aiCredits) when it would take
 * the period's spending past the plan's limit. Locks the organization row until `tx` ends.
 */
export async function charge(tx: Db, c: Charge): Promise<void> {
  if (c.plan) {
    await lockOrganization(tx, c.organizationId);
    const spent = await creditsSpent(tx, c.organizationId, periodOf(c.plan, c.now).start);
    const limit = c.plan.limits.aiCredits;
    if (spent + c.amount > limit) {
      throw new ApiError('LIMIT_REACHED', { data: { kind: 'aiCredits', limit, plan: c.plan.plan } });
    }
  }
  await record(tx, { ...c, countsAt: c.now });
}

/**
 * Gives back what a job was charged (jobs.cancel of a job none of whose attempts has started:
 * decisions.md), each charge counted back in its own period; answers the credits refunded.
 */
export async function refundJob(tx: Db, job: { id: string; organizationId: string }, now: Date): Promise<number> {
  const charges = await tx<{ amount: number; countsAt: Date }[]>`
    select amount, counts_at as "countsAt" from credit_ledger where job_id = ${job.id} and amount > 0`;
  for (const c of charges) {
    await record(tx, { organizationId: job.organizationId, amount: -c.amount, reason: 'job.cancel', jobId: job.id, now, countsAt: c.countsAt });
  }
  return charges.reduce((sum, c) => sum + c.amount, 0);
}

/**
 * Gives back `amount` of what a job was charged (a workspace.index job's documents it did not
 * index), from its latest charges first, each part counted back in the period of the charge it
 * gives back and never more than that charge's net after earlier refunds. Answers what it gave back.
 */
export async function refundJobPart(tx: Db, job: { id: string; organizationId: string }, amount: number, now: Date): Promise<number> {
  if (amount <= 0) return 0;
  const periods = await tx<{ net: number; countsAt: Date }[]>`
    select sum(amount)::int as net, counts_at as "countsAt" from credit_ledger where job_id = ${job.id}
    group by counts_at having sum(amount) > 0 order by counts_at desc`;
  let left = amount;
  for (const period of periods) {
    if (left === 0) break;
    const part = Math.min(left, period.net);
    await record(tx, { organizationId: job.organizationId, amount: -part, reason: 'job.cancel', jobId: job.id, now, countsAt: period.countsAt });
    left -= part;
  }
  return amount - left;
}

async function record(tx: Db, c: Omit<Charge, 'plan'> & { countsAt: Date }): Promise<void> {
  await tx`
    insert into credit_ledger (id, organization_id, job_id, amount, reason, created_at, counts_at)
    values (${newId('crd')}, ${c.organizationId}, ${c.jobId}, ${c.amount}, ${c.reason}, ${c.now}, ${c.countsAt})`;
}

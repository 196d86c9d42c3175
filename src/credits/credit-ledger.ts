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
 * The free plan's credits come once per owner (issue 40): the organizations without a subscription
 * that one user owns first share one allowance (allowanceOf), so a second free organization adds
 * no credits. Its charges also take that owner's allowance lock, after the organization's.
 * The plans themselves are in plans.ts; what a job costs in pricing.ts; usage reports in usage.ts.
 */
import type { Db } from '../db/db.ts';
import { ApiError } from '../contract/errors.ts';
import { newId } from '../ids.ts';
import { lockOrganization } from '../organizations/store.ts';
import { firstOwnerOf, freeOrganizationsOwnedBy, lockFreeOrganizationsOf } from '../organizations/members-store.ts';

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

/** The organizations' balance of the ledger since `since`: charges minus refunds that count from then on. */
async function creditsSpentBy(sql: Db, organizationIds: string[], since: Date): Promise<number> {
  const [row] = await sql<{ spent: number }[]>`
    select coalesce(sum(amount), 0)::int as spent from credit_ledger
    where organization_id in ${sql(organizationIds)} and counts_at >= ${since}`;
  return row!.spent;
}

/**
 * The organizations whose charges count against `organizationId`'s allowance, itself included: on
 * the free plan, every organization without a subscription that its first owner owns first; on a
 * paid plan, itself alone. With `lock`, takes the owner's allowance lock until `tx` ends, so two of
 * those organizations' charges cannot both fit in the last credits.
 */
async function allowanceOf(db: Db, organizationId: string, plan: CreditAllowance, lock: boolean): Promise<string[]> {
  if (plan.plan !== 'free') return [organizationId];
  const owner = await firstOwnerOf(db, organizationId);
  if (!owner) return [organizationId];
  if (lock) await lockFreeOrganizationsOf(db, owner);
  const shared = await freeOrganizationsOwnedBy(db, owner);
  return shared.includes(organizationId) ? shared : [organizationId, ...shared];
}

/** What the organization's allowance has spent since `since` (the free plan's is shared: allowanceOf). */
export async function allowanceSpent(db: Db, organizationId: string, plan: CreditAllowance | null, since: Date): Promise<number> {
  return creditsSpentBy(db, plan ? await allowanceOf(db, organizationId, plan, false) : [organizationId], since);
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
    const sharing = await allowanceOf(tx, c.organizationId, c.plan, true);
    const spent = await creditsSpentBy(tx, sharing, periodOf(c.plan, c.now).start);
    const limit = c.plan.limits.aiCredits;
    if (spent + c.amount > limit) {
      const shared =
        sharing.length > 1
          ? {
              message: `The free plan's ${limit} AI credits a month are shared by the ${sharing.length} organizations without a subscription that this organization's first owner owns, and they are spent.`,
            }
          : {};
      throw new ApiError('LIMIT_REACHED', { ...shared, data: { kind: 'aiCredits', limit, plan: c.plan.plan } });
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

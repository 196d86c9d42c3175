/**
 * SQL of the platform admin's organization list (admin.organizations.list): one page of
 * organizations, newest first, with their counts and their live (else most recent) subscription.
 */
import type { Db } from '../db/db.ts';
import type { ProcedureOutput } from '../../generated/procedures.ts';
import { isPlanName } from '../billing/plans.ts';
import { LIVE_SUBSCRIPTION, type SubscriptionStatus } from '../billing/subscriptions-store.ts';

export type OrganizationSummary = ProcedureOutput<'admin.organizations.list'>['items'][number];

interface SummaryRow {
  id: string;
  name: string;
  slug: string;
  created_at: Date;
  payment_customer_id: string | null;
  members: number;
  workspaces: number;
  subscription_id: string | null;
  subscription_plan: string | null;
  subscription_status: SubscriptionStatus | null;
  subscription_live: boolean | null;
  seats: number | null;
  period_end: Date | null;
  cancel_at_period_end: boolean | null;
  payment_subscription_id: string | null;
}

export interface SummaryQuery {
  search: string | undefined;
  limit: number;
  offset: number;
}

/** One page and the number of matches. strpos on lower(): a plain substring test, no LIKE wildcards to escape. */
export async function pageOrganizations(db: Db, query: SummaryQuery): Promise<{ rows: SummaryRow[]; total: number }> {
  const needle = (query.search ?? '').toLowerCase();
  const matches = needle === '' ? db`true` : db`(strpos(lower(o.name), ${needle}) > 0 or strpos(lower(o.slug), ${needle}) > 0)`;
  const [counted] = await db<{ total: number }[]>`select count(*)::int as total from organizations o where ${matches}`;
  const rows = await db<SummaryRow[]>`
    select o.id, o.name, o.slug, o.created_at, o.payment_customer_id,
           (select count(*) from members m where m.organization_id = o.id)::int as members,
           (select count(*) from workspaces w where w.organization_id = o.id)::int as workspaces,
           s.id as subscription_id, s.plan as subscription_plan, s.status as subscription_status, s.live as subscription_live,
           s.seats, s.period_end, s.cancel_at_period_end, s.payment_subscription_id
    from organizations o
    left join lateral (
      select s.*, s.status in ${db(LIVE_SUBSCRIPTION)} as live from subscriptions s where s.organization_id = o.id
      order by (s.status in ${db(LIVE_SUBSCRIPTION)}) desc, s.created_at desc, s.id desc limit 1
    ) s on true
    where ${matches}
    order by o.created_at desc, o.id desc
    limit ${query.limit} offset ${query.offset}`;
  return { rows, total: counted!.total };
}

/** `billed`: whether billing is configured (otherwise there is no plan). */
export function toSummary(row: SummaryRow, billed: boolean): OrganizationSummary {
  const live = row.subscription_live === true;
  const plan = !billed ? null : live && row.subscription_plan && isPlanName(row.subscription_plan) ? row.subscription_plan : 'free';
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    createdAt: row.created_at,
    paymentCustomerId: row.payment_customer_id,
    members: row.members,
    workspaces: row.workspaces,
    plan,
    seats: { billed: live ? row.seats : null, members: row.members },
    subscription: row.subscription_id === null ? null : {
      id: row.subscription_id,
      plan: row.subscription_plan!,
      status: row.subscription_status!,
      seats: row.seats,
      periodEnd: row.period_end,
      cancelAtPeriodEnd: row.cancel_at_period_end!,
      paymentSubscriptionId: row.payment_subscription_id,
    },
  };
}

/**
 * SQL of the platform admin's organization list (admin.organizations.list): one page of
 * organizations, newest first, with their counts and their live (else most recent) subscription,
 * in camelCase rows (organization-procedures.ts maps them to the contract's shape).
 */
import type { Db } from '../db/db.ts';
import { LIVE_SUBSCRIPTION, type SubscriptionStatus } from '../billing/subscriptions-store.ts';

/** An organization of the list with its counts and subscription, camelCase (the handler maps it to the contract). */
export interface SummaryRow {
  id: string;
  name: string;
  slug: string;
  createdAt: Date;
  paymentCustomerId: string | null;
  members: number;
  workspaces: number;
  subscriptionId: string | null;
  subscriptionPlan: string | null;
  subscriptionStatus: SubscriptionStatus | null;
  subscriptionLive: boolean | null;
  seats: number | null;
  periodEnd: Date | null;
  cancelAtPeriodEnd: boolean | null;
  paymentSubscriptionId: string | null;
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
    select o.id, o.name, o.slug, o.created_at as "createdAt", o.payment_customer_id as "paymentCustomerId",
           (select count(*) from members m where m.organization_id = o.id)::int as members,
           (select count(*) from workspaces w where w.organization_id = o.id)::int as workspaces,
           s.id as "subscriptionId", s.plan as "subscriptionPlan", s.status as "subscriptionStatus", s.live as "subscriptionLive",
           s.seats, s.period_end as "periodEnd", s.cancel_at_period_end as "cancelAtPeriodEnd",
           s.payment_subscription_id as "paymentSubscriptionId"
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

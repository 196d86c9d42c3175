/**
 * SQL of subscriptions (sql/0002_identity.sql, 0007_billing.sql): the only module that writes them,
 * where their rows become camelCase, and their mapping to the contract's Subscription. Rows are
 * written only from what Stripe reports (webhook.ts, and the answers of the calls in
 * subscription-routes.ts and the admin's cancel); nothing here talks to Stripe.
 */
import type { Db } from '../db/db.ts';
import type { ProcedureOutput } from '../../generated/procedures.ts';
/** Subscription statuses that still bill (or may bill again). */ export const LIVE_SUBSCRIPTION = ['active', 'trialing', 'past_due', 'unpaid', 'paused'];

export type Subscription = NonNullable<ProcedureOutput<'billing.status'>['subscription']>;
export type SubscriptionStatus = Subscription['status'];

/** What Stripe says about a subscription, in this table's terms (stripe-mapping.ts). */
export interface SubscriptionState {
  organizationId: string;
  paymentSubscriptionId: string;
  plan: string;
  status: SubscriptionStatus;
  seats: number | null;
  periodStart: Date | null;
  periodEnd: Date | null;
  trialEnd: Date | null;
  cancelAtPeriodEnd: boolean;
  cancelAt: Date | null;
  billingInterval: string | null;
}

/** A stored subscription: what Stripe said, and what this service keeps beside it. */
export interface SubscriptionRow extends Omit<SubscriptionState, 'paymentSubscriptionId'> {
  id: string;
  paymentSubscriptionId: string | null;
  paymentFailed: boolean;
  stateEventAt: Date | null;
  paymentEventAt: Date | null;
  createdAt: Date;
}

// Every column this module answers, camelCase. A constant list, so `unsafe` injects nothing from outside.
const COLUMNS = `id, organization_id as "organizationId", plan, status, seats, period_start as "periodStart", period_end as "periodEnd",
  trial_end as "trialEnd", cancel_at_period_end as "cancelAtPeriodEnd", cancel_at as "cancelAt", billing_interval as "billingInterval",
  payment_subscription_id as "paymentSubscriptionId", payment_failed as "paymentFailed", state_event_at as "stateEventAt",
  payment_event_at as "paymentEventAt", created_at as "createdAt"`;

export function toSubscription(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    plan: row.plan,
    status: row.status,
    seats: row.seats,
    periodEnd: row.periodEnd,
    trialEnd: row.trialEnd,
    cancelAtPeriodEnd: row.cancelAtPeriodEnd,
    cancelAt: row.cancelAt,
    billingInterval: row.billingInterval,
  };
}

/** The organization's live subscription (the newest, should Stripe ever report two), or null. */
export async function liveSubscription(db: Db, organizationId: string): Promise<SubscriptionRow | null> {
  const [row] = await db<SubscriptionRow[]>`
    select ${db.unsafe(COLUMNS)} from subscriptions where organization_id = ${organizationId} and status in ${db(LIVE_SUBSCRIPTION)}
    order by created_at desc, id desc limit 1`;
  return row ?? null;
}

/** The live subscription, else the most recent one (billing.status, the admin list), or null. */
export async function currentSubscription(db: Db, organizationId: string): Promise<SubscriptionRow | null> {
  const [row] = await db<SubscriptionRow[]>`
    select ${db.unsafe(COLUMNS)} from subscriptions where organization_id = ${organizationId}
    order by (status in ${db(LIVE_SUBSCRIPTION)}) desc, created_at desc, id desc limit 1`;
  return row ?? null;
}

export async function findByPaymentId(db: Db, paymentSubscriptionId: string, options: { lock?: boolean } = {}): Promise<SubscriptionRow | null> {
  const [row] = await db<SubscriptionRow[]>`
    select ${db.unsafe(COLUMNS)} from subscriptions where payment_subscription_id = ${paymentSubscriptionId} ${options.lock ? db`for update` : db``}`;
  return row ?? null;
}

export async function insertSubscription(tx: Db, id: string, state: SubscriptionState, eventAt: Date | null, now: Date): Promise<SubscriptionRow> {
  const [row] = await tx<SubscriptionRow[]>`
    insert into subscriptions (id, organization_id, plan, status, seats, period_start, period_end, trial_end, cancel_at_period_end,
                               cancel_at, billing_interval, payment_subscription_id, state_event_at, created_at, updated_at)
    values (${id}, ${state.organizationId}, ${state.plan}, ${state.status}, ${state.seats}, ${state.periodStart}, ${state.periodEnd},
            ${state.trialEnd}, ${state.cancelAtPeriodEnd}, ${state.cancelAt}, ${state.billingInterval}, ${state.paymentSubscriptionId},
            ${eventAt}, ${now}, ${now})
    returning ${tx.unsafe(COLUMNS)}`;
  return row!;
}

export async function updateSubscriptionState(tx: Db, id: string, state: SubscriptionState, eventAt: Date | null, now: Date): Promise<SubscriptionRow> {
  const [row] = await tx<SubscriptionRow[]>`
    update subscriptions
    set plan = ${state.plan}, status = ${state.status}, seats = ${state.seats}, period_start = ${state.periodStart},
        period_end = ${state.periodEnd}, trial_end = ${state.trialEnd}, cancel_at_period_end = ${state.cancelAtPeriodEnd},
        cancel_at = ${state.cancelAt}, billing_interval = ${state.billingInterval},
        state_event_at = coalesce(${eventAt}, state_event_at), updated_at = ${now}
    where id = ${id}
    returning ${tx.unsafe(COLUMNS)}`;
  return row!;
}

export async function setPaymentFailed(tx: Db, id: string, failed: boolean, eventAt: Date, now: Date): Promise<void> {
  await tx`update subscriptions set payment_failed = ${failed}, payment_event_at = ${eventAt}, updated_at = ${now} where id = ${id}`;
}

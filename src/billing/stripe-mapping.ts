/**
 * Stripe's subscription object in this service's terms. The plan and interval come from the
 * price (the configured STRIPE_PRICE_* ids), else from the metadata the checkout set; the period
 * from the subscription's item (Stripe moved it there from the subscription in 2025).
 */
import type Stripe from 'stripe';
import type { BillingSettings, PaidPlan } from '../config.ts';
import type { SubscriptionState, SubscriptionStatus } from './subscriptions-store.ts';

const seconds = (value: number | null | undefined): Date | null => (typeof value === 'number' ? new Date(value * 1000) : null);

/** The plan and interval a price id was configured for, or null for a price this deployment does not sell. */
export function priceTerms(settings: BillingSettings, priceId: string | undefined): { plan: PaidPlan; interval: 'month' | 'year' } | null {
  for (const plan of ['pro', 'team'] as const) {
    for (const interval of ['month', 'year'] as const) if (priceId && settings.prices[plan][interval] === priceId) return { plan, interval };
  }
  return null;
}

/** The organization a Stripe object belongs to, from the metadata the checkout put on it. */
export function organizationOf(object: { metadata?: Stripe.Metadata | null }): string | null {
  return object.metadata?.organizationId ?? null;
}

export function subscriptionState(settings: BillingSettings, subscription: Stripe.Subscription, organizationId: string): SubscriptionState {
  const item = subscription.items?.data?.[0];
  const terms = priceTerms(settings, item?.price?.id);
  return {
    organizationId,
    paymentSubscriptionId: subscription.id,
    plan: terms?.plan ?? subscription.metadata?.plan ?? 'unknown',
    status: subscription.status as SubscriptionStatus,
    seats: item?.quantity ?? null,
    periodStart: seconds(item?.current_period_start),
    periodEnd: seconds(item?.current_period_end),
    trialEnd: seconds(subscription.trial_end),
    cancelAtPeriodEnd: subscription.cancel_at_period_end,
    cancelAt: seconds(subscription.cancel_at),
    billingInterval: terms?.interval ?? item?.price?.recurring?.interval ?? null,
  };
}

/**
 * Changes to a live subscription made at Stripe on a person's request (the admin's cancel, the
 * owner's cancel and restore), recorded from Stripe's answer at once: the webhook events that
 * follow carry the same state and change nothing more.
 */
import type { Principal } from '../auth/principal.ts';
import type { BillingSettings, Config } from '../config.ts';
import type { Database } from '../db/connection.ts';
import { writeAudit } from '../audit/store.ts';
import { ApiError } from '../contract/errors.ts';
import type { StripeClient } from './stripe-client.ts';
import { subscriptionState } from './stripe-mapping.ts';
import { applySubscriptionState, toStripeSecond } from './subscription-sync.ts';
import { liveSubscription, type SubscriptionRow } from './subscriptions-store.ts';

/** The services these changes use (a rule does not import the handler types: context.ts's Services has them). */
interface BillingServices {
  config: Config;
  db: Database;
  stripe: StripeClient;
  now(): Date;
}

export type SubscriptionChange = 'cancel-at-period-end' | 'cancel-now' | 'restore';

/** The configured billing settings; 412 when billing is not set up on this deployment. */
export function billingSettings(services: Pick<BillingServices, 'config'>): BillingSettings {
  if (!services.config.billing) throw new ApiError('PRECONDITION_FAILED', { message: 'Billing is not configured on this deployment.' });
  return services.config.billing;
}

/** The organization's live subscription that Stripe knows; 404 when there is none. */
export async function liveAtStripe(services: Pick<BillingServices, 'db'>, organizationId: string): Promise<SubscriptionRow & { paymentSubscriptionId: string }> {
  const live = await liveSubscription(services.db.sql, organizationId);
  if (!live?.paymentSubscriptionId) throw new ApiError('NOT_FOUND', { message: 'The organization has no live subscription.' });
  return live as SubscriptionRow & { paymentSubscriptionId: string };
}

/** Makes the change at Stripe, records Stripe's answer and audits it (`subscription.<change>`). */
export async function changeSubscription(
  services: Pick<BillingServices, 'db' | 'config' | 'now' | 'stripe'>,
  actor: Principal,
  live: SubscriptionRow & { paymentSubscriptionId: string },
  change: SubscriptionChange,
): Promise<SubscriptionRow> {
  const settings = billingSettings(services);
  const stripe = await services.stripe();
  const id = live.paymentSubscriptionId;
  const reported = change === 'cancel-now' ? await stripe.subscriptions.cancel(id) : await stripe.subscriptions.update(id, { cancel_at_period_end: change === 'cancel-at-period-end' });
  const now = services.now();
  return services.db.sql.begin(async (tx) => {
    const row = (await applySubscriptionState(tx, subscriptionState(settings, reported, live.organizationId), toStripeSecond(now), now)) ?? live;
    const action = change === 'restore' ? 'subscription.restored' : 'subscription.canceled';
    await writeAudit(
      tx,
      {
        organizationId: live.organizationId,
        action,
        actor,
        targetType: 'subscription',
        targetId: live.id,
        metadata: { immediately: change === 'cancel-now', status: row.status, cancelAtPeriodEnd: row.cancelAtPeriodEnd },
      },
      now,
    );
    return row;
  });
}

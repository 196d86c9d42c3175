/**
 * POST /api/auth/stripe/webhook (identity.md route 40). The signature is checked over the body's
 * exact bytes with the webhook secret and Stripe's default tolerance (5 minutes); a delivery that
 * fails it changes nothing. Each event is claimed by id in the transaction that applies it, so a
 * replay is acknowledged and ignored; subscription writes go through applySubscriptionState, which
 * ignores reports older than the row's, so late deliveries cannot undo newer ones.
 */
import type Stripe from 'stripe';
import type { AuthHandlers } from '../context.ts';
import type { BillingSettings } from '../config.ts';
import type { Db } from '../db/db.ts';
import type { Sql } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import { badRequest } from '../contract/errors.ts';
import { organizationOfCustomer, setCustomer } from '../organizations/store.ts';
import { claimEvent, wasHandled } from './stripe-events-store.ts';
import { organizationOf, subscriptionState } from './stripe-mapping.ts';
import { billingSettings } from './subscription-changes.ts';
import { applySubscriptionState } from './subscription-sync.ts';
import { findByPaymentId, setPaymentFailed } from './subscriptions-store.ts';

const RECEIVED = { body: { received: true as const } };

export const webhookRoutes = {
  async 'auth.stripe.webhook'(_input, ctx) {
    const settings = billingSettings(ctx.services);
    const stripe = await ctx.services.stripe();
    const { sql } = ctx.services.db;
    let event: Stripe.Event;
    try {
      event = stripe.webhooks.constructEvent(ctx.rawBody() ?? '', ctx.header('stripe-signature') ?? '', settings.webhookSecret, undefined, undefined, ctx.services.now().getTime());
    } catch (error) {
      ctx.log.warn({ reason: error instanceof Error ? error.message : String(error) }, 'stripe webhook refused');
      throw badRequest([{ path: ['stripe-signature'], message: 'does not sign this body with the webhook secret within the tolerance' }], 'The webhook signature does not verify.');
    }
    if (await wasHandled(sql, event.id)) return RECEIVED;
    const reportedAt = new Date(event.created * 1000);
    const now = ctx.services.now();
    // What needs Stripe is asked before the transaction (no connection held across a network call).
    const apply = await prepare(event, { settings, stripe, sql, log: ctx.log });
    await sql.begin(async (tx) => {
      if (!(await claimEvent(tx, { id: event.id, type: event.type, created: reportedAt }))) return;
      await apply?.(tx, reportedAt, now);
    });
    return RECEIVED;
  },
} satisfies AuthHandlers;

type Apply = (tx: Db, reportedAt: Date, now: Date) => Promise<void>;

interface Deps {
  settings: BillingSettings;
  stripe: Stripe;
  sql: Sql;
  log: Logger;
}

/** What the event changes, or null for a type this service does not follow (acknowledged all the same). */
async function prepare(event: Stripe.Event, deps: Deps): Promise<Apply | null> {
  switch (event.type) {
    case 'checkout.session.completed': {
      const session = event.data.object;
      const organizationId = session.client_reference_id ?? organizationOf(session);
      const subscriptionId = typeof session.subscription === 'string' ? session.subscription : session.subscription?.id;
      if (session.mode !== 'subscription' || !organizationId || !subscriptionId) return null;
      // The session does not carry the subscription's state: Stripe's current one is recorded.
      const subscription = await deps.stripe.subscriptions.retrieve(subscriptionId);
      const customer = typeof session.customer === 'string' ? session.customer : session.customer?.id;
      return async (tx, reportedAt, now) => {
        if (customer) await setCustomer(tx, organizationId, customer);
        await applySubscriptionState(tx, subscriptionState(deps.settings, subscription, organizationId), reportedAt, now);
      };
    }
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted': {
      const subscription = event.data.object;
      // The metadata the checkout set; else the row already stored; else the organization of the customer.
      const customer = typeof subscription.customer === 'string' ? subscription.customer : subscription.customer.id;
      const organizationId = organizationOf(subscription) ?? (await findByPaymentId(deps.sql, subscription.id))?.organizationId ?? (await organizationOfCustomer(deps.sql, customer));
      if (!organizationId) {
        deps.log.warn({ eventId: event.id, subscriptionId: subscription.id }, 'stripe subscription names no organization; ignored');
        return null;
      }
      return async (tx, reportedAt, now) => {
        await applySubscriptionState(tx, subscriptionState(deps.settings, subscription, organizationId), reportedAt, now);
      };
    }
    case 'invoice.paid':
    case 'invoice.payment_failed': {
      const subscriptionId = invoiceSubscription(event.data.object);
      if (!subscriptionId) return null;
      const failed = event.type === 'invoice.payment_failed';
      return async (tx, reportedAt, now) => {
        const row = await findByPaymentId(tx, subscriptionId, { lock: true });
        if (!row) {
          deps.log.warn({ eventId: event.id, subscriptionId }, 'invoice of a subscription not recorded; ignored');
          return;
        }
        // An older invoice event delivered late does not undo a newer one's verdict.
        if (row.paymentEventAt && reportedAt < row.paymentEventAt) return;
        await setPaymentFailed(tx, row.id, failed, reportedAt, now);
      };
    }
    default:
      return null;
  }
}

/** The invoice's subscription: under `parent` since Stripe's 2025 API versions, at the top before. */
function invoiceSubscription(invoice: Stripe.Invoice & { subscription?: string | { id: string } | null }): string | null {
  const fromParent = invoice.parent?.subscription_details?.subscription;
  const value = fromParent ?? invoice.subscription ?? null;
  return typeof value === 'string' ? value : (value?.id ?? null);
}

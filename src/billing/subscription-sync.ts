/**
 * Writes what Stripe reports about a subscription, whoever learned it: a webhook event, or the
 * answer to a call this service made (cancel, restore). Stripe may deliver events twice and out of
 * order, so a report older than the one a row was last written from changes nothing, and a
 * subscription that ended (canceled, incomplete_expired: final at Stripe) never comes back to life.
 */
import type { Db } from '../db/db.ts';
import { newId } from '../ids.ts';
import { lockOrganization } from '../organizations/store.ts';
import { findByPaymentId, insertSubscription, updateSubscriptionState, type SubscriptionRow, type SubscriptionState } from './subscriptions-store.ts';

const FINAL = new Set(['canceled', 'incomplete_expired']);

/**
 * Applies `state` as of `reportedAt` (an event's `created`, or when a call's answer came back;
 * whole seconds, as Stripe counts). Answers the row as it now stands, or null when the
 * organization is gone (a late event about a deleted organization is dropped).
 */
export async function applySubscriptionState(tx: Db, state: SubscriptionState, reportedAt: Date, now: Date): Promise<SubscriptionRow | null> {
  const organization = await lockOrganization(tx, state.organizationId);
  if (!organization) return null;
  const current = await findByPaymentId(tx, state.paymentSubscriptionId, { lock: true });
  if (!current) return insertSubscription(tx, newId('sbs'), state, reportedAt, now);
  if (current.stateEventAt && reportedAt < current.stateEventAt) return current;
  if (FINAL.has(current.status) && current.status !== state.status) return current;
  return updateSubscriptionState(tx, current.id, state, reportedAt, now);
}

/** `now` in whole seconds, the resolution of Stripe's `created`. */
export function toStripeSecond(date: Date): Date {
  return new Date(Math.floor(date.getTime() / 1000) * 1000);
}

/**
 * Identity routes of an organization's subscription (identity.md routes 38 and 39): Checkout for a
 * paid plan, cancel at period end and restore, and the billing portal. Access (billing:manage in
 * the organization) is the binding layer's; the subscription itself is recorded from Stripe's
 * webhook (webhook.ts) or Stripe's answers (subscription-changes.ts), never from a request.
 */
import { type AuthHandlers, signedIn } from '../context.ts';
import { absoluteTarget, checkRedirectTarget, defaultRedirect } from '../auth/redirect-targets.ts';
import { ApiError } from '../contract/errors.ts';
import { findOrganization } from '../organizations/store.ts';
import { billingSettings, changeSubscription, liveAtStripe } from './subscription-changes.ts';
import { liveSubscription, toSubscription } from './subscriptions-store.ts';
import { customerOf, setCustomer } from '../organizations/store.ts';

export const subscriptionRoutes = {
  async 'auth.subscription.upgrade'(input, ctx) {
    const settings = billingSettings(ctx.services);
    const { sql } = ctx.services.db;
    checkRedirectTarget(ctx.services.config, 'successUrl', input.successUrl);
    checkRedirectTarget(ctx.services.config, 'cancelUrl', input.cancelUrl);
    const interval = input.annual ? 'year' : 'month';
    const price = settings.prices[input.plan][interval];
    if (!price) throw new ApiError('PRECONDITION_FAILED', { message: `No ${interval}ly price is configured for the ${input.plan} plan.` });
    // One live subscription per organization: a second Checkout would bill twice. Plan changes go
    // through the billing portal, where Stripe prorates them on the same subscription.
    if (await liveSubscription(sql, input.organizationId)) {
      throw new ApiError('CONFLICT', { message: 'The organization already has a live subscription: change its plan in the billing portal, or cancel it first.' });
    }
    const stripe = await ctx.services.stripe();
    let customer = await customerOf(sql, input.organizationId);
    if (!customer) {
      const organization = await findOrganization(sql, input.organizationId);
      if (!organization) throw new ApiError('FORBIDDEN'); // deleted since the access check
      const created = await stripe.customers.create({ name: organization.name, metadata: { organizationId: organization.id } });
      // Two first checkouts at once: the first customer recorded wins, the other stays unused at Stripe.
      customer = await setCustomer(sql, organization.id, created.id);
    }
    const metadata = { organizationId: input.organizationId, plan: input.plan };
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer,
      client_reference_id: input.organizationId,
      line_items: [{ price, quantity: input.seats ?? 1 }],
      success_url: input.successUrl,
      cancel_url: input.cancelUrl,
      metadata,
      // The subscription carries the organization, so every later event about it names it.
      subscription_data: { metadata },
    });
    if (!session.url) throw new Error('Stripe answered a Checkout session without a url');
    ctx.log.info({ organizationId: input.organizationId, plan: input.plan, interval, userId: signedIn(ctx).userId }, 'checkout started');
    return { body: { url: session.url, redirect: true as const } };
  },

  async 'auth.subscription.cancel'(input, ctx) {
    billingSettings(ctx.services);
    const live = await liveAtStripe(ctx.services, input.organizationId);
    return { body: toSubscription(await changeSubscription(ctx.services, signedIn(ctx), live, 'cancel-at-period-end')) };
  },

  async 'auth.subscription.restore'(input, ctx) {
    billingSettings(ctx.services);
    const live = await liveAtStripe(ctx.services, input.organizationId);
    return { body: toSubscription(await changeSubscription(ctx.services, signedIn(ctx), live, 'restore')) };
  },

  async 'auth.subscription.billingPortal'(input, ctx) {
    billingSettings(ctx.services);
    checkRedirectTarget(ctx.services.config, 'returnUrl', input.returnUrl);
    const customer = await customerOf(ctx.services.db.sql, input.organizationId);
    if (!customer) throw new ApiError('PRECONDITION_FAILED', { message: 'The organization has no Stripe customer yet: subscribe first.' });
    const returnUrl = absoluteTarget(ctx.services.config, input.returnUrl ?? defaultRedirect(ctx.services.config));
    const session = await (await ctx.services.stripe()).billingPortal.sessions.create({ customer, return_url: returnUrl });
    return { body: { url: session.url, redirect: true as const } };
  },
} satisfies AuthHandlers;

/** billing.status: the organization's plan, limits, subscription and what it is above. */
import type { Handlers } from '../context.ts';
import { currentSubscription, toSubscription } from './subscriptions-store.ts';
import { overLimits, usageOf } from '../credits/usage.ts';

export const billingProcedures = {
  'billing.status': async (input, ctx) => {
    const { db, config, plans } = ctx.services;
    if (!config.billing) return { enabled: false, plan: null, limits: null, subscription: null, paymentFailed: false, overLimit: [] };
    const plan = await plans.limitsFor(input.organizationId);
    const subscription = await currentSubscription(db.sql, input.organizationId);
    const { usage } = await usageOf(db.sql, input.organizationId, plan, ctx.services.now());
    return {
      enabled: true,
      plan: plan?.plan ?? null,
      limits: plan?.limits ?? null,
      subscription: subscription ? toSubscription(subscription) : null,
      // Follows the invoices of the live (or most recent) subscription: invoice.payment_failed sets it, invoice.paid clears it.
      paymentFailed: subscription?.paymentFailed ?? false,
      overLimit: overLimits(plan, usage),
    };
  },
} satisfies Handlers;

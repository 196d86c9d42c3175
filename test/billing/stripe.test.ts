/**
 * Stripe billing end to end against a local stand-in for Stripe's API (STRIPE_API_URL): Checkout
 * for an upgrade, the webhook that records the subscription (signed with the stripe library's
 * test header helper), billing.status and organizations.usage, cancel / restore / the billing
 * portal, and the webhook's guarantees: a bad, stale or tampered signature changes nothing,
 * replays are ignored, and late deliveries do not undo newer reports.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import { PLAN_LIMITS } from '../../src/credits/plans.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { startStripeStandIn, type StripeStandIn } from '../support/stripe-stand-in.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { clientOf } from '../jobs/support.ts';
import { BILLING_ENV } from './support.ts';

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );
const SECRET = BILLING_ENV.STRIPE_WEBHOOK_SECRET!;

let stand: StripeStandIn;
let server: TestServer;
beforeAll(async () => {
  stand = await startStripeStandIn();
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000', ...BILLING_ENV, STRIPE_API_URL: stand.url, WEB_URL: 'https://app.example.com' } });
});
afterAll(async () => {
  await server?.close();
  await stand?.close();
});

function post(path: string, user: TestUser, body: unknown) {
  return server.fetch(`/api/auth${path}`, { method: 'POST', headers: { ...user.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

function deliver(payload: string, signature: string | null = stand.sign(payload, SECRET)) {
  return server.fetch('/api/auth/stripe/webhook', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(signature ? { 'stripe-signature': signature } : {}) },
    body: payload,
  });
}

async function send(type: string, object: Record<string, any>, created?: number): Promise<string> {
  const event = stand.event(type, object, created);
  const response = await deliver(event.payload);
  expect(response.status, await response.clone().text()).toBe(200);
  expect(await response.json()).toEqual({ received: true });
  return event.id;
}

const checkoutInput = (organizationId: string, extra: Record<string, unknown> = {}) => ({
  organizationId,
  plan: 'pro',
  seats: 3,
  successUrl: 'https://app.example.com/billing?ok=1',
  cancelUrl: 'https://app.example.com/billing',
  ...extra,
});

/** An owner's organization that went through Checkout, with the webhook's checkout.session.completed delivered. */
async function subscribed(plan: 'pro' | 'team' = 'pro') {
  const owner = await createUser(server.db);
  const org = await addMembership(server.db, owner, 'owner');
  const response = await post('/subscription/upgrade', owner, checkoutInput(org, { plan }));
  expect(response.status, await response.clone().text()).toBe(200);
  const customer = (await server.db.sql<{ payment_customer_id: string }[]>`select payment_customer_id from organizations where id = ${org}`)[0]!.payment_customer_id;
  const subscription = stand.createSubscription({ customer, organizationId: org, price: `price_${plan}_month`, plan, quantity: 3 });
  await send('checkout.session.completed', {
    id: 'cs_test_1',
    object: 'checkout.session',
    mode: 'subscription',
    client_reference_id: org,
    customer,
    subscription: subscription.id,
    metadata: { organizationId: org, plan },
  });
  return { owner, org, subscription, api: clientOf(server, owner) };
}

describe('upgrade through Checkout', () => {
  it('creates the customer once and a Checkout session for the configured price; nothing changes until the webhook', async () => {
    const owner = await createUser(server.db);
    const org = await addMembership(server.db, owner, 'owner');
    const response = await post('/subscription/upgrade', owner, checkoutInput(org, { annual: true }));
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toEqual({ url: expect.stringMatching(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_/), redirect: true });
    const [customerCall, sessionCall] = stand.requests.slice(-2);
    expect(customerCall).toMatchObject({ method: 'POST', path: '/v1/customers', params: { 'metadata[organizationId]': org }, authorization: 'Bearer sk_test_standin' });
    expect(sessionCall).toMatchObject({
      method: 'POST',
      path: '/v1/checkout/sessions',
      params: {
        mode: 'subscription',
        client_reference_id: org,
        'line_items[0][price]': 'price_pro_year',
        'line_items[0][quantity]': '3',
        'subscription_data[metadata][organizationId]': org,
        'subscription_data[metadata][plan]': 'pro',
        success_url: 'https://app.example.com/billing?ok=1',
      },
    });
    // A second attempt (the first was abandoned) reuses the customer.
    expect((await post('/subscription/upgrade', owner, checkoutInput(org))).status).toBe(200);
    expect(stand.requests.at(-1)).toMatchObject({ path: '/v1/checkout/sessions', params: { customer: sessionCall!.params.customer, 'line_items[0][price]': 'price_pro_month' } });
    expect(await clientOf(server, owner).billing.status({ organizationId: org })).toMatchObject({ enabled: true, plan: 'free', limits: PLAN_LIMITS.free, subscription: null });
  });

  it('refuses untrusted return addresses (400), members without billing:manage (403)', async () => {
    const owner = await createUser(server.db);
    const org = await addMembership(server.db, owner, 'owner');
    const bad = await post('/subscription/upgrade', owner, checkoutInput(org, { successUrl: 'https://evil.example.net/x' }));
    expect(bad.status).toBe(400);
    expect((await bad.json()).data.issues[0].path).toEqual(['successUrl']);
    const admin = await createUser(server.db);
    await addMembership(server.db, admin, 'admin', org);
    expect((await post('/subscription/upgrade', admin, checkoutInput(org))).status).toBe(403);
  });

  it('records the subscription from checkout.session.completed: plan, limits, period and seats', async () => {
    const { org, api, subscription } = await subscribed('team');
    const status = await api.billing.status({ organizationId: org });
    const item = subscription.items.data[0];
    expect(status).toEqual({
      enabled: true,
      plan: 'team',
      limits: PLAN_LIMITS.team,
      paymentFailed: false,
      overLimit: [],
      subscription: {
        id: expect.stringMatching(/^sbs_/),
        plan: 'team',
        status: 'active',
        seats: 3,
        periodEnd: new Date(item.current_period_end * 1000),
        trialEnd: null,
        cancelAtPeriodEnd: false,
        cancelAt: null,
        billingInterval: 'month',
      },
    });
    const usage = await api.organizations.usage({ organizationId: org });
    expect(usage).toMatchObject({ plan: 'team', period: { start: new Date(item.current_period_start * 1000), end: new Date(item.current_period_end * 1000) } });
  });

  it('answers 409 to an upgrade while a subscription is live', async () => {
    const { owner, org } = await subscribed();
    const response = await post('/subscription/upgrade', owner, checkoutInput(org, { plan: 'team' }));
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: 'CONFLICT' });
  });
});

describe('cancel, restore and the billing portal', () => {
  it('cancels at period end and restores, at Stripe, answering the subscription', async () => {
    const { owner, org, subscription, api } = await subscribed();
    const canceled = await post('/subscription/cancel', owner, { organizationId: org });
    expect(canceled.status).toBe(200);
    expect(await canceled.json()).toMatchObject({ status: 'active', cancelAtPeriodEnd: true, cancelAt: expect.any(String) });
    expect(stand.requests.at(-1)).toMatchObject({ method: 'POST', path: `/v1/subscriptions/${subscription.id}`, params: { cancel_at_period_end: 'true' } });
    expect((await api.billing.status({ organizationId: org })).subscription).toMatchObject({ cancelAtPeriodEnd: true });
    const restored = await post('/subscription/restore', owner, { organizationId: org });
    expect(await restored.json()).toMatchObject({ status: 'active', cancelAtPeriodEnd: false, cancelAt: null });
    expect(stand.requests.at(-1)).toMatchObject({ params: { cancel_at_period_end: 'false' } });
  });

  it('opens the billing portal for the customer, back to the web app by default', async () => {
    const { owner, org } = await subscribed();
    const response = await post('/subscription/billing-portal', owner, { organizationId: org });
    expect(await response.json()).toEqual({ url: expect.stringMatching(/^https:\/\/billing\.stripe\.test\//), redirect: true });
    expect(stand.requests.at(-1)).toMatchObject({ path: '/v1/billing_portal/sessions', params: { customer: expect.stringMatching(/^cus_/), return_url: 'https://app.example.com/' } });
  });

  it('answers 404 without a live subscription and 412 for the portal without a customer', async () => {
    const owner = await createUser(server.db);
    const org = await addMembership(server.db, owner, 'owner');
    expect((await post('/subscription/cancel', owner, { organizationId: org })).status).toBe(404);
    expect((await post('/subscription/restore', owner, { organizationId: org })).status).toBe(404);
    expect((await post('/subscription/billing-portal', owner, { organizationId: org })).status).toBe(412);
  });
});

describe('the webhook', () => {
  const subscriptionRow = async (paymentId: string) => (await server.db.sql`select status, cancel_at_period_end, payment_failed from subscriptions where payment_subscription_id = ${paymentId}`)[0];

  it('refuses a bad, stale, tampered or missing signature with 400, changing nothing', async () => {
    const { subscription } = await subscribed();
    const updated = { ...subscription, status: 'past_due' };
    const event = stand.event('customer.subscription.updated', updated);
    const cases = [
      stand.sign(event.payload, 'whsec_wrong'),
      stand.sign(event.payload, SECRET, Math.floor(Date.now() / 1000) - 301), // past the 5-minute tolerance
      null,
    ];
    for (const signature of cases) {
      const response = await deliver(event.payload, signature);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'BAD_REQUEST' });
    }
    // Signed, then changed: the signature covers the exact bytes.
    const tampered = event.payload.replace('"past_due"', '"canceled"');
    expect((await deliver(tampered, stand.sign(event.payload, SECRET))).status).toBe(400);
    expect(await subscriptionRow(subscription.id)).toMatchObject({ status: 'active' });
    expect(await server.db.sql`select id from stripe_events where id = ${event.id}`).toHaveLength(0);
    // The same event, properly signed, goes through.
    expect((await deliver(event.payload)).status).toBe(200);
    expect(await subscriptionRow(subscription.id)).toMatchObject({ status: 'past_due' });
  });

  it('handles each event once: a replay changes nothing', async () => {
    const { subscription } = await subscribed();
    const t = Math.floor(Date.now() / 1000);
    const pastDue = stand.event('customer.subscription.updated', { ...subscription, status: 'past_due' }, t + 10);
    expect((await deliver(pastDue.payload)).status).toBe(200);
    await send('customer.subscription.updated', { ...subscription, status: 'active' }, t + 10);
    // The first event again (Stripe retries a delivery it thinks failed): acknowledged, ignored.
    const replay = await deliver(pastDue.payload);
    expect(await replay.json()).toEqual({ received: true });
    expect(await subscriptionRow(subscription.id)).toMatchObject({ status: 'active' });
    expect(await server.db.sql`select id from stripe_events where id = ${pastDue.id}`).toHaveLength(1);
  });

  it('ignores reports older than the stored one (out-of-order delivery)', async () => {
    const { subscription, org, api } = await subscribed();
    const t = Math.floor(Date.now() / 1000);
    await send('customer.subscription.deleted', { ...subscription, status: 'canceled' }, t + 100);
    await send('customer.subscription.updated', { ...subscription, status: 'active', cancel_at_period_end: true }, t + 50);
    expect(await subscriptionRow(subscription.id)).toMatchObject({ status: 'canceled', cancel_at_period_end: false });
    // An ended subscription stays ended even for a report of the same second.
    await send('customer.subscription.updated', { ...subscription, status: 'active' }, t + 100);
    expect(await subscriptionRow(subscription.id)).toMatchObject({ status: 'canceled' });
    // Back on free, with the canceled subscription still shown.
    expect(await api.billing.status({ organizationId: org })).toMatchObject({ plan: 'free', subscription: { status: 'canceled' } });
  });

  it('paymentFailed follows invoice.payment_failed and invoice.paid, newest first', async () => {
    const { subscription, org, api } = await subscribed();
    const t = Math.floor(Date.now() / 1000);
    const invoice = (id: string) => ({ id, object: 'invoice', customer: subscription.customer, parent: { type: 'subscription_details', subscription_details: { subscription: subscription.id } } });
    await send('invoice.payment_failed', invoice('in_2'), t + 20);
    expect((await api.billing.status({ organizationId: org })).paymentFailed).toBe(true);
    await send('invoice.paid', invoice('in_1'), t + 10); // an older payment, delivered late
    expect((await api.billing.status({ organizationId: org })).paymentFailed).toBe(true);
    await send('invoice.paid', invoice('in_2'), t + 30);
    expect((await api.billing.status({ organizationId: org })).paymentFailed).toBe(false);
  });

  it("records a subscription without the checkout's metadata by its customer (made in Stripe's dashboard)", async () => {
    const { org, subscription } = await subscribed();
    await send('customer.subscription.deleted', { ...subscription, status: 'canceled' }, Math.floor(Date.now() / 1000) + 5);
    const bare = stand.createSubscription({ customer: subscription.customer, organizationId: org, price: 'price_team_year', plan: 'team' });
    await send('customer.subscription.created', { ...bare, metadata: {} });
    expect(await subscriptionRow(bare.id)).toMatchObject({ status: 'active' });
    const [row] = await server.db.sql`select organization_id, plan, billing_interval from subscriptions where payment_subscription_id = ${bare.id}`;
    expect(row).toEqual({ organization_id: org, plan: 'team', billing_interval: 'year' });
  });

  it('acknowledges event types it does not follow, and answers 412 while billing is off', async () => {
    await send('customer.created', { id: 'cus_x', object: 'customer' });
    // A top-level field Stripe adds one day is accepted, not refused (a refused delivery is retried).
    const later = stand.event('customer.created', { id: 'cus_y', object: 'customer' });
    const extended = JSON.stringify({ ...JSON.parse(later.payload), added_by_stripe_later: { any: 'thing' } });
    expect((await deliver(extended)).status).toBe(200);
    const unbilled = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
    try {
      const event = stand.event('customer.created', { id: 'cus_x', object: 'customer' });
      const response = await unbilled.fetch('/api/auth/stripe/webhook', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': stand.sign(event.payload, SECRET) },
        body: event.payload,
      });
      expect(response.status).toBe(412);
      const owner = await createUser(unbilled.db);
      const org = await addMembership(unbilled.db, owner, 'owner');
      const upgrade = await unbilled.fetch('/api/auth/subscription/upgrade', {
        method: 'POST',
        headers: { ...owner.headers, 'content-type': 'application/json' },
        body: JSON.stringify(checkoutInput(org)),
      });
      expect(upgrade.status).toBe(412);
      expect(await clientOf(unbilled, owner).billing.status({ organizationId: org })).toEqual({ enabled: false, plan: null, limits: null, subscription: null, paymentFailed: false, overLimit: [] });
    } finally {
      await unbilled.close();
    }
  });
});

describe('the whole story', () => {
  it('upgrade, see the plan, hit a limit after moving back to free, then a platform admin cancels and deletes', async () => {
    const { owner, org, subscription, api } = await subscribed('pro');
    for (let i = 0; i < 4; i++) await api.workspaces.create({ organizationId: org, name: `W${i}`, slug: `w-${i}` });
    expect((await api.billing.status({ organizationId: org })).overLimit).toEqual([]);
    // The subscription ends at Stripe: free allows 3 workspaces, the organization has 4.
    await send('customer.subscription.deleted', { ...subscription, status: 'canceled' }, Math.floor(Date.now() / 1000) + 5);
    expect(await api.billing.status({ organizationId: org })).toMatchObject({ plan: 'free', overLimit: [{ kind: 'workspaces', current: 4, limit: 3 }] });
    expect(await failure(api.workspaces.create({ organizationId: org, name: 'W4', slug: 'w-4' }))).toMatchObject({
      status: 403,
      code: 'LIMIT_REACHED',
      data: { kind: 'workspaces', limit: 3, plan: 'free' },
    });

    // Subscribed again; the platform admin cancels it at once and deletes the organization.
    const customer = (await server.db.sql<{ payment_customer_id: string }[]>`select payment_customer_id from organizations where id = ${org}`)[0]!.payment_customer_id;
    const again = stand.createSubscription({ customer, organizationId: org, price: 'price_pro_month', plan: 'pro' });
    await send('customer.subscription.created', again);
    const admin = clientOf(server, await createUser(server.db, { role: 'admin' }));
    const slug = (await server.db.sql`select slug from organizations where id = ${org}`)[0]!.slug;
    expect(await failure(admin.admin.organizations.delete({ organizationId: org, confirmSlug: slug }))).toMatchObject({ status: 412 });
    expect(await admin.admin.organizations.cancelSubscription({ organizationId: org, immediately: true })).toEqual({ status: 'canceled', cancelAtPeriodEnd: false });
    expect(await admin.admin.organizations.delete({ organizationId: org, confirmSlug: slug })).toEqual({ organizationId: org, objectsDeleted: 0, objectsFailed: 0 });
    // A late event about the deleted organization is acknowledged and dropped.
    await send('customer.subscription.updated', { ...again, status: 'canceled' });
    expect(owner).toBeDefined();
  });
});

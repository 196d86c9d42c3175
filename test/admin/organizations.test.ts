/**
 * admin.organizations.*: the list (search, offset paging, total, summary rows), the cancellation
 * of a subscription at Stripe (a local stand-in), and the deletion of an organization with its
 * cascade and its stored objects. Access (403 to non-admins, 404 for a missing organization) is
 * swept by test/contract/access.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import { newId } from '../../src/ids.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { startStripeStandIn, type StripeStandIn } from '../support/stripe-stand-in.ts';
import { addMembership, createUser } from '../support/users.ts';
import { clientOf, tenant, uploadDocument } from '../jobs/support.ts';
import { BILLING_ENV } from '../billing/support.ts';

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );

let stand: StripeStandIn;
let billed: TestServer;
let unbilled: TestServer;
beforeAll(async () => {
  stand = await startStripeStandIn();
  const env = { RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000' };
  [billed, unbilled] = await Promise.all([startTestServer({ env: { ...env, ...BILLING_ENV, STRIPE_API_URL: stand.url } }), startTestServer({ env })]);
});
afterAll(async () => {
  await Promise.all([billed?.close(), unbilled?.close()]);
  await stand?.close();
});

async function organization(server: TestServer, name: string, slug: string, createdAt: string): Promise<string> {
  const id = newId('org');
  await server.db.sql`insert into organizations (id, name, slug, created_at) values (${id}, ${name}, ${slug}, ${createdAt})`;
  return id;
}

/** A live subscription the stand-in knows, recorded as the webhook would have. */
async function liveSubscription(server: TestServer, org: string, plan: 'pro' | 'team' = 'pro') {
  const customer = `cus_${org}`;
  await server.db.sql`update organizations set payment_customer_id = ${customer} where id = ${org}`;
  const remote = stand.createSubscription({ customer, organizationId: org, price: `price_${plan}_month`, plan, quantity: 7 });
  const id = newId('sbs');
  const item = remote.items.data[0];
  await server.db.sql`insert into subscriptions (id, organization_id, plan, status, seats, period_start, period_end, billing_interval, payment_subscription_id)
                      values (${id}, ${org}, ${plan}, 'active', 7, ${new Date(item.current_period_start * 1000)}, ${new Date(item.current_period_end * 1000)}, 'month', ${remote.id})`;
  return { id, remote };
}

describe('admin.organizations.list', () => {
  it('pages newest first with the total, searches name and slug, and shows counts, plan, seats and subscription', async () => {
    const admin = await createUser(billed.db, { role: 'admin' });
    const marker = newId('x').slice(2, 12);
    const oldest = await organization(billed, `Alpha ${marker}`, `alpha-${marker}`, '2026-01-01T00:00:00Z');
    const middle = await organization(billed, `Beta ${marker}`, `beta-${marker}`, '2026-02-01T00:00:00Z');
    const newest = await organization(billed, `Gamma`, `gamma-${marker}`, '2026-03-01T00:00:00Z');
    const member = await createUser(billed.db);
    await addMembership(billed.db, member, 'owner', middle);
    await billed.db.sql`insert into workspaces (id, organization_id, name, slug) values (${newId('ws')}, ${middle}, 'W', 'w')`;
    const { id: subscriptionId, remote } = await liveSubscription(billed, middle, 'team');

    const api = clientOf(billed, admin);
    const page = await api.admin.organizations.list({ search: marker.toUpperCase(), limit: 2 });
    expect(page.total).toBe(3);
    expect(page.items.map((o) => o.id)).toEqual([newest, middle]);
    expect(page.items[1]).toEqual({
      id: middle,
      name: `Beta ${marker}`,
      slug: `beta-${marker}`,
      createdAt: new Date('2026-02-01T00:00:00Z'),
      paymentCustomerId: `cus_${middle}`,
      members: 1,
      workspaces: 1,
      plan: 'team',
      seats: { billed: 7, members: 1 },
      subscription: { id: subscriptionId, plan: 'team', status: 'active', seats: 7, periodEnd: expect.any(Date), cancelAtPeriodEnd: false, paymentSubscriptionId: remote.id },
    });
    expect(page.items[0]).toMatchObject({ plan: 'free', seats: { billed: null, members: 0 }, subscription: null, paymentCustomerId: null });
    const rest = await api.admin.organizations.list({ search: marker, limit: 2, offset: 2 });
    expect(rest).toEqual({ total: 3, items: [expect.objectContaining({ id: oldest })] });
    // Past the end: no rows, the total still counted; a search for LIKE wildcards matches them literally.
    expect(await api.admin.organizations.list({ search: marker, offset: 10 })).toEqual({ items: [], total: 3 });
    expect(await api.admin.organizations.list({ search: '%' })).toEqual({ items: [], total: 0 });
  });

  it('has no plan while billing is off', async () => {
    const admin = await createUser(unbilled.db, { role: 'admin' });
    const org = await organization(unbilled, 'Unbilled', `unbilled-${newId('x').slice(2, 10)}`, '2026-01-01T00:00:00Z');
    const page = await clientOf(unbilled, admin).admin.organizations.list({ search: 'Unbilled' });
    expect(page.items).toEqual([expect.objectContaining({ id: org, plan: null, subscription: null })]);
  });
});

describe('admin.organizations.cancelSubscription', () => {
  it('answers 412 while billing is not configured', async () => {
    const admin = await createUser(unbilled.db, { role: 'admin' });
    const org = await addMembership(unbilled.db, admin, 'owner');
    expect(await failure(clientOf(unbilled, admin).admin.organizations.cancelSubscription({ organizationId: org }))).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED' });
  });

  it('answers 404 without a live subscription', async () => {
    const admin = await createUser(billed.db, { role: 'admin' });
    const org = await organization(billed, 'No sub', `no-sub-${newId('x').slice(2, 10)}`, '2026-01-01T00:00:00Z');
    expect(await failure(clientOf(billed, admin).admin.organizations.cancelSubscription({ organizationId: org }))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it('cancels at period end by default, at once with immediately, at Stripe, recorded and audited', async () => {
    const admin = await createUser(billed.db, { role: 'admin' });
    const api = clientOf(billed, admin);
    const org = await organization(billed, 'Billed', `billed-${newId('x').slice(2, 10)}`, '2026-01-01T00:00:00Z');
    const { id, remote } = await liveSubscription(billed, org);

    expect(await api.admin.organizations.cancelSubscription({ organizationId: org })).toEqual({ status: 'active', cancelAtPeriodEnd: true });
    expect(stand.requests.at(-1)).toMatchObject({ method: 'POST', path: `/v1/subscriptions/${remote.id}`, params: { cancel_at_period_end: 'true' }, authorization: 'Bearer sk_test_standin' });
    const [atPeriodEnd] = await billed.db.sql`select status, cancel_at_period_end, cancel_at from subscriptions where id = ${id}`;
    expect(atPeriodEnd).toMatchObject({ status: 'active', cancel_at_period_end: true, cancel_at: expect.any(Date) });

    expect(await api.admin.organizations.cancelSubscription({ organizationId: org, immediately: true })).toEqual({ status: 'canceled', cancelAtPeriodEnd: true });
    expect(stand.requests.at(-1)).toMatchObject({ method: 'DELETE', path: `/v1/subscriptions/${remote.id}` });
    // Nothing live any more: a second cancellation finds none.
    expect(await failure(api.admin.organizations.cancelSubscription({ organizationId: org }))).toMatchObject({ status: 404 });
    const audit = await billed.db.sql`select action, actor_id, metadata from audit_log where organization_id = ${org} order by created_at, id`;
    expect(audit).toEqual([
      { action: 'subscription.canceled', actor_id: admin.id, metadata: { immediately: false, status: 'active', cancelAtPeriodEnd: true } },
      { action: 'subscription.canceled', actor_id: admin.id, metadata: { immediately: true, status: 'canceled', cancelAtPeriodEnd: true } },
    ]);
  });
});

describe('admin.organizations.delete', () => {
  it('answers 404 when confirmSlug differs and 412 while a subscription is live; nothing is deleted', async () => {
    const admin = await createUser(billed.db, { role: 'admin' });
    const api = clientOf(billed, admin);
    const slug = `keep-${newId('x').slice(2, 10)}`;
    const org = await organization(billed, 'Keep', slug, '2026-01-01T00:00:00Z');
    expect(await failure(api.admin.organizations.delete({ organizationId: org, confirmSlug: 'other-slug' }))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    await liveSubscription(billed, org);
    expect(await failure(api.admin.organizations.delete({ organizationId: org, confirmSlug: slug }))).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED' });
    expect(await billed.db.sql`select id from organizations where id = ${org}`).toHaveLength(1);
  });

  it('audits first, deletes the stored objects (counted) and leaves no row of the organization in any table', async () => {
    const admin = await createUser(unbilled.db, { role: 'admin' });
    const t = await tenant(unbilled);
    const { sql } = unbilled.db;
    // Something in every table that has an organization_id: members, invitations, teams, workspaces,
    // documents (two stored objects), jobs, the credit ledger, job events, audit entries, subscriptions.
    const docs = [await uploadDocument(t, 'a.txt', 'text/plain', Buffer.from('hello')), await uploadDocument(t, 'b.txt', 'text/plain', Buffer.from('world'))];
    await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['x'] } });
    await sql`insert into teams (id, organization_id, name) values (${newId('team')}, ${t.org}, 'Team')`;
    await sql`insert into invitations (id, organization_id, email, role, expires_at) values (${newId('inv')}, ${t.org}, 'x@example.com', 'member', now() + interval '1 day')`;
    await sql`insert into subscriptions (id, organization_id, plan, status) values (${newId('sbs')}, ${t.org}, 'pro', 'canceled')`;
    await sql`insert into audit_log (id, organization_id, action) values (${newId('aud')}, ${t.org}, 'test.entry')`;
    const tables = await sql<{ table_name: string }[]>`
      select table_name from information_schema.columns where table_schema = 'public' and column_name = 'organization_id' order by table_name`;
    const rowsOf = async () =>
      Object.fromEntries(
        await Promise.all(
          tables.map(async ({ table_name }) => [table_name, (await sql.unsafe<{ n: number }[]>(`select count(*)::int as n from "${table_name}" where organization_id = $1`, [t.org]))[0]!.n] as const),
        ),
      );
    const before = await rowsOf();
    for (const table of ['members', 'invitations', 'teams', 'workspaces', 'documents', 'jobs', 'credit_ledger', 'audit_log', 'subscriptions']) expect(before[table], table).toBeGreaterThan(0);
    for (const doc of docs) expect(await unbilled.services.storage.stat(`${t.org}/${doc.id}`)).not.toBeNull();

    const slug = (await sql<{ slug: string }[]>`select slug from organizations where id = ${t.org}`)[0]!.slug;
    const result = await clientOf(unbilled, admin).admin.organizations.delete({ organizationId: t.org, confirmSlug: slug });
    expect(result).toEqual({ organizationId: t.org, objectsDeleted: 2, objectsFailed: 0 });
    expect(
      Object.values(await rowsOf()).every((n) => n === 0),
      JSON.stringify(await rowsOf()),
    ).toBe(true);
    expect(await sql`select id from organizations where id = ${t.org}`).toHaveLength(0);
    for (const doc of docs) expect(await unbilled.services.storage.stat(`${t.org}/${doc.id}`)).toBeNull();
    // The platform-level entry outlives the organization.
    expect(await sql`select action, actor_id, target_id, metadata from audit_log where target_id = ${t.org} and organization_id is null`).toEqual([
      { action: 'organization.deleted', actor_id: admin.id, target_id: t.org, metadata: { name: expect.any(String), slug } },
    ]);
  });
});

describe('a signed-in non-admin', () => {
  it('gets 403 from every admin organization procedure', async () => {
    const user = await createUser(billed.db);
    const org = await addMembership(billed.db, user, 'owner');
    const api = clientOf(billed, user);
    for (const call of [
      () => api.admin.organizations.list({}),
      () => api.admin.organizations.cancelSubscription({ organizationId: org }),
      () => api.admin.organizations.delete({ organizationId: org, confirmSlug: 'whatever' }),
    ])
      expect(await failure(call())).toMatchObject({ status: 403, code: 'FORBIDDEN' });
  });
});

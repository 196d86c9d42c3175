/**
 * The free plan's AI credits come once per owner (issue 40, "Fairness by owner"): organizations
 * cost nothing to create, so the ones a user owns first without a subscription share one
 * allowance (credit-ledger.ts allowanceOf). A second free organization adds no credits; another
 * owner's organization has its own; organizations.usage shows the shared spending. The plan is
 * stood in for (free, 3 credits a month, for every organization), the ledger and the ownership
 * are real. Runs on both databases: the shared allowance is taken under the owner's lock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership } from '../support/users.ts';
import { clientOf, creditsSpent, tenant, type Tenant } from './support.ts';

const CREDITS = 3;

describe('the free plan credits of one owner', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      env: { WORKER: 'off', RATE_LIMIT_PER_MINUTE: '100000' },
      overrides: { plans: { limitsFor: async () => ({ plan: 'free', limits: { workspaces: 3, members: 5, aiCredits: CREDITS, storageBytes: 1 << 30 } }) } },
    });
  });
  afterAll(() => server?.close());

  const embed = (t: Tenant) => t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['x'] } });

  it('are shared by the organizations they own first, not granted to each', async () => {
    const a = await tenant(server);
    const x: Tenant = { ...a, org: await addMembership(server.db, a.owner, 'owner') };
    await embed(a);
    await embed(a);
    await embed(x);
    expect((await a.client.organizations.usage({ organizationId: x.org })).usage.aiCredits).toBe(CREDITS);
    expect((await a.client.organizations.usage({ organizationId: a.org })).usage.aiCredits).toBe(CREDITS);

    const refused = await embed(x).catch((error: unknown) => error);
    expect(refused).toMatchObject({
      status: 403,
      code: 'LIMIT_REACHED',
      data: { kind: 'aiCredits', limit: CREDITS, plan: 'free' },
      message: `The free plan's ${CREDITS} AI credits a month are shared by the 2 organizations without a subscription that this organization's first owner owns, and they are spent.`,
    });
    await expect(embed(a)).rejects.toMatchObject({ status: 403, code: 'LIMIT_REACHED' });
    expect(await creditsSpent(server, x.org)).toBe(1);

    // Another owner's organization has its allowance, even with A's owner as a member of it.
    const b = await tenant(server);
    await addMembership(server.db, a.owner, 'admin', b.org);
    const asMember = clientOf(server, a.owner);
    for (let i = 0; i < CREDITS; i++) await asMember.jobs.create({ organizationId: b.org, kind: 'text.embed', input: { texts: ['y'] } });
    expect(await creditsSpent(server, b.org)).toBe(CREDITS);

    // A cancel gives the credits back to the shared allowance.
    const [queued] = await server.db.sql<{ id: string }[]>`select id from jobs where organization_id = ${a.org} and status = 'queued' limit 1`;
    await a.client.jobs.cancel({ id: queued!.id });
    await embed(x);
  });

  it("an organization with a live subscription pays for itself and leaves the owner's allowance", async () => {
    const a = await tenant(server);
    const paid = await addMembership(server.db, a.owner, 'owner');
    // Its subscription (billing/subscriptions-store.ts's table), as a Stripe webhook would record it.
    await server.db.sql`
      insert into subscriptions (id, organization_id, plan, status, payment_subscription_id, created_at, updated_at)
      values (${`sub_${paid}`}, ${paid}, 'pro', 'active', ${`stripe_${paid}`}, now(), now())`;
    for (let i = 0; i < CREDITS; i++) await embed(a);
    expect((await a.client.organizations.usage({ organizationId: a.org })).usage.aiCredits).toBe(CREDITS);
    await expect(embed(a)).rejects.toMatchObject({ status: 403, code: 'LIMIT_REACHED', message: expect.not.stringContaining('shared') });
  });
});

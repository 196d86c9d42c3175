/**
 * AI credits under bursts: 50 concurrent jobs.create against an organization with a few credits
 * left never spend past the limit, nor do creates racing across two free organizations of one
 * owner, which share one allowance (credit-ledger.ts allowanceOf), and the ledger balances exactly (every job's credits charged,
 * every cancel refunded once, even when cancels race each other). Real parallel transactions run
 * under `make test-pg`; on the embedded database the same calls take turns.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { externalDatabaseUrl } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { BURST_ENV, burst, clientFor, expectOnly, settablePlans, succeeded } from './support.ts';

const { plans, limits } = settablePlans();
let server: TestServer;
let owner: TestUser;

beforeAll(async () => {
  // No worker: jobs stay queued, so they can be canceled.
  server = await startTestServer({ env: { ...BURST_ENV, WORKER: 'off' }, overrides: { plans } });
  if (externalDatabaseUrl) expect(server.db.kind).toBe('external');
});
// An owner of their own for each test: the free plan's credits are one allowance per owner.
beforeEach(async () => {
  owner = await createUser(server.db);
});
afterAll(() => server?.close());

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

async function ledger(org: string): Promise<{ spent: number; charges: number; refunds: number }> {
  return ledgerOf([org]);
}

async function ledgerOf(orgs: string[]): Promise<{ spent: number; charges: number; refunds: number }> {
  const [row] = await server.db.sql<{ spent: number; charges: number; refunds: number }[]>`
    select coalesce(sum(amount), 0)::int as spent, count(*) filter (where amount > 0)::int as charges, count(*) filter (where amount < 0)::int as refunds
    from credit_ledger where organization_id in ${server.db.sql(orgs)}`;
  return row!;
}

describe('jobs.create at the credit limit', () => {
  it('50 concurrent creations spend exactly up to the limit, never past it', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    limits.set(org, { aiCredits: 17 });
    const api = clientFor(server, owner);
    // Two credits spent before the burst: 15 left, so 15 one-credit jobs fit.
    await api.jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: ['a'] } });
    await api.jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: ['b'] } });
    const outcomes = await burst(range(50).map((i) => () => api.jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: [`text ${i}`] } })));
    expectOnly(outcomes, ['LIMIT_REACHED']);
    expect(succeeded(outcomes)).toHaveLength(15);
    expect(await ledger(org)).toEqual({ spent: 17, charges: 17, refunds: 0 });
    const [jobs] = await server.db.sql<{ n: number; credits: number }[]>`select count(*)::int as n, sum(credits)::int as credits from jobs where organization_id = ${org}`;
    expect(jobs).toEqual({ n: 17, credits: 17 });
  });

  it("one owner's free organizations racing for their shared allowance: exactly up to it, never past", async () => {
    const a = await addMembership(server.db, owner, 'owner');
    const x = await addMembership(server.db, owner, 'owner');
    for (const org of [a, x]) limits.set(org, { aiCredits: 12 });
    const api = clientFor(server, owner);
    // 40 creates, alternating between the two organizations, for 12 credits between them.
    const outcomes = await burst(range(40).map((i) => () => api.jobs.create({ organizationId: i % 2 ? x : a, kind: 'text.embed', input: { texts: [`s${i}`] } })));
    expectOnly(outcomes, ['LIMIT_REACHED']);
    expect(succeeded(outcomes)).toHaveLength(12);
    const [both, first, second] = [await ledgerOf([a, x]), await ledger(a), await ledger(x)];
    expect(both).toEqual({ spent: 12, charges: 12, refunds: 0 });
    expect(first.spent + second.spent).toBe(12);
  });

  it('two-credit jobs racing for an odd remainder: the last credit stays unspent', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    limits.set(org, { aiCredits: 9 });
    const api = clientFor(server, owner);
    const workspace = await api.workspaces.create({ organizationId: org, name: 'Docs', slug: 'docs' });
    const { document, upload } = await api.documents.createUpload({ organizationId: org, workspaceId: workspace.id, name: 'a.txt', contentType: 'text/plain', size: 3 });
    await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: 'abc' });
    await api.documents.complete({ id: document.id });
    const outcomes = await burst(range(20).map(() => () => api.jobs.create({ organizationId: org, kind: 'document.index', documentId: document.id })));
    expectOnly(outcomes, ['LIMIT_REACHED']);
    expect(succeeded(outcomes)).toHaveLength(4);
    expect(await ledger(org)).toEqual({ spent: 8, charges: 4, refunds: 0 });
  });

  it('cancels racing creations and each other: every job charged once, refunded at most once, the ledger balances', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    limits.set(org, { aiCredits: 10 });
    const api = clientFor(server, owner);
    const first = await Promise.all(range(10).map((i) => api.jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: [`t${i}`] } })));
    // Each of the ten canceled twice at once, while twenty more creations race for the freed credits.
    const outcomes = await burst<unknown>([
      ...first.flatMap((job) => [() => api.jobs.cancel({ id: job.id }), () => api.jobs.cancel({ id: job.id })]),
      ...range(20).map((i) => () => api.jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: [`u${i}`] } })),
    ]);
    expectOnly(outcomes, ['CONFLICT', 'LIMIT_REACHED']);
    const cancels = outcomes.slice(0, 20);
    expect(succeeded(cancels)).toHaveLength(10);
    const { spent, charges, refunds } = await ledger(org);
    expect(refunds).toBe(10);
    const [live] = await server.db.sql<{ credits: number }[]>`select coalesce(sum(credits), 0)::int as credits from jobs where organization_id = ${org} and status <> 'canceled'`;
    expect(spent).toBe(live!.credits);
    expect(spent).toBeLessThanOrEqual(10);
    expect(charges).toBe(10 + succeeded(outcomes.slice(20)).length);
  });
});

/**
 * What jobs.cancel gives back (decisions.md, Credits): a job none of whose attempts has started is
 * refunded in full, in the period of its charge; a job waiting for a retry after a failed attempt
 * (queued again, attempt 1) keeps its charge, its work having been done.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settablePlans } from '../concurrency/support.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { creditsSpent, tenant, waitForJob } from './support.ts';

const { plans, limits } = settablePlans();
let clock = new Date('2026-04-30T23:50:00Z');

describe('a cancel refunds in the period of the charge', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { WORKER: 'off' }, overrides: { plans, now: () => clock } });
  });
  afterAll(() => server?.close());

  it("a job charged in April and cancelled in May leaves May's credits whole", async () => {
    const t = await tenant(server);
    limits.set(t.org, { aiCredits: 1 });
    clock = new Date('2026-04-30T23:50:00Z');
    const april = await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['april'] } });
    clock = new Date('2026-05-01T00:10:00Z');
    expect((await t.client.jobs.cancel({ id: april.id })).status).toBe('canceled');
    // May's one credit is still one: the refund counted in April (where it brought spending to 0),
    // so May fits exactly one job, not two.
    await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['may'] } });
    await expect(t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['may again'] } })).rejects.toMatchObject({ status: 403, code: 'LIMIT_REACHED' });
    expect((await t.client.organizations.usage({ organizationId: t.org })).usage.aiCredits).toBe(1);
    const [ledger] = await server.db.sql<{ refundCountsAt: Date; refundCreatedAt: Date }[]>`
      select counts_at as "refundCountsAt", created_at as "refundCreatedAt" from credit_ledger where job_id = ${april.id} and amount < 0`;
    expect(ledger!.refundCountsAt.toISOString()).toBe('2026-04-30T23:50:00.000Z');
    expect(ledger!.refundCreatedAt.toISOString()).toBe('2026-05-01T00:10:00.000Z');
  });
});

describe("a cancel during a retry's backoff", () => {
  let server: TestServer;
  beforeAll(async () => {
    clock = new Date();
    // The AI service is down (a closed port): text.embed fails in a way worth retrying, and the
    // queue waits a minute before the next attempt.
    server = await startTestServer({ aiService: false, env: { AI_URL: 'http://127.0.0.1:9' }, overrides: { queue: { retryDelaySeconds: 60, pollingSeconds: 0.5 } } });
  });
  afterAll(() => server?.close());

  it('keeps the charge of a job whose first attempt ran', async () => {
    const t = await tenant(server);
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['retried'] } });
    expect(await creditsSpent(server, t.org)).toBe(1);
    const deadline = Date.now() + 30_000;
    let waiting = await t.client.jobs.get({ id: job.id });
    while (!(waiting.status === 'queued' && waiting.attempt === 1)) {
      if (Date.now() > deadline) throw new Error(`job never waited for a retry: ${JSON.stringify(waiting)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      waiting = await t.client.jobs.get({ id: job.id });
    }
    const canceled = await t.client.jobs.cancel({ id: job.id });
    expect(canceled).toMatchObject({ status: 'canceled', attempt: 1, credits: 1 });
    expect(await creditsSpent(server, t.org)).toBe(1);
    expect((await waitForJob(t, job.id)).status).toBe('canceled');
  });

  it('refunds a job cancelled before its first attempt', async () => {
    const t = await tenant(server);
    await server.services.queue.stop(); // no worker from here on: the job stays queued, attempt 0
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['never ran'] } });
    expect(await t.client.jobs.cancel({ id: job.id })).toMatchObject({ status: 'canceled', attempt: 0 });
    expect(await creditsSpent(server, t.org)).toBe(0);
  });
});

/**
 * Fair service across organizations (queue.ts, Fairness; docs/jobs.md), with the worker inline on
 * the test's database (embedded, or PostgreSQL under `scripts/test-pg.sh`): organization A queues
 * a backlog of long jobs; B (and C) then queue one job of the same kind while A's first jobs run.
 * Their jobs start within about one of A's fetches, not after A's whole backlog, and succeed
 * while most of A's backlog is still queued. Jobs last until the test answers their AI request
 * (fairness-support.ts), so the assertions are on the order jobs started in, not on time.
 *
 * The cap on an organization's queued jobs (MAX_QUEUED_JOBS_PER_ORGANIZATION): the next create
 * answers 429 with Retry-After, charges nothing, and is admitted again once a queued job has gone.
 *
 * Turns and the cap go by payer (organizations/payer.ts; issue 40): the organizations one user owns
 * without a subscription take one turn per round between them, and share one cap.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClientError } from '../../clients/typescript/src/index.ts';
import { QUEUE_FULL_RETRY_AFTER_SECONDS, queueFullRetryAfter } from '../../src/jobs/lifecycle.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership } from '../support/users.ts';
import { clientOf, creditsSpent, tenant, type Tenant } from './support.ts';
import { allSucceeded, fetchOrder, heldEmbeddings, queuedCount, serveUntil, type HeldEmbeddings } from './fairness-support.ts';

const BACKLOG = 24;

describe('fair service across organizations (inline worker)', () => {
  let server: TestServer;
  let ai: HeldEmbeddings;
  let batchSize: number;

  beforeAll(async () => {
    ai = await heldEmbeddings();
    // One worker: the jobs running at once are one fetched batch (4 on the embedded database).
    server = await startTestServer({ aiService: false, env: { AI_URL: ai.url, WORKER_CONCURRENCY: '1', RATE_LIMIT_PER_MINUTE: '100000' } });
    batchSize = server.services.config.worker.batchSize;
  });
  afterAll(async () => {
    await ai?.close();
    await server?.close();
  });

  const embed = (t: Tenant, label: string) => t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: [label] } });

  it("another organization's job starts within one fetch of A's backlog and succeeds before it drains; a third one too", async () => {
    const a = await tenant(server);
    const b = await tenant(server);
    const c = await tenant(server);
    // A's first job is running (held by the AI stand-in: the one worker is busy with it) when A
    // queues the rest of its backlog, and B and C queue theirs.
    await embed(a, 'A0');
    await ai.untilHeld(1);
    for (let i = 1; i < BACKLOG; i++) await embed(a, `A${i}`);
    const bJob = await embed(b, 'B0');
    const cJob = await embed(c, 'C0');

    await serveUntil(ai, () => allSucceeded(server.db, [bJob.id, cJob.id]));

    // First come, first served would start B and C after all of A's BACKLOG jobs. Fair: they tie
    // with A's next waiting job (A's turn goes first, it was queued first), so they are in the
    // first fetch after the running job (the requests of one batch arrive in any order).
    const started = ai.arrivals;
    expect(started[0]).toBe('A0');
    expect(started.indexOf('B0')).toBeGreaterThan(0);
    expect(started.indexOf('B0')).toBeLessThanOrEqual(batchSize);
    expect(started.indexOf('C0')).toBeLessThanOrEqual(batchSize);
    expect(startedBefore(started, 'B0', `A${batchSize + 1}`)).toBe(true);
    // Both succeeded while most of A's backlog still waits.
    expect(await queuedCount(server.db, a.org)).toBeGreaterThanOrEqual(BACKLOG / 2);
    // The rest runs at once, so the next test starts on an empty queue.
    ai.answerAll();
    await serveUntil(ai, async () => (await queuedCount(server.db, a.org)) === 0 && (await runningCount(server)) === 0);
  }, 120_000);

  it('an organization with a backlog takes one turn per round: the queue interleaves two organizations', async () => {
    const a = await tenant(server);
    const b = await tenant(server);
    ai.arrivals.length = 0;
    ai.hold();
    await embed(a, 'A0');
    await ai.untilHeld(1);
    for (let i = 1; i < 8; i++) await embed(a, `A${i}`);
    const bJobs: { id: string }[] = [];
    for (let i = 0; i < 4; i++) bJobs.push(await embed(b, `B${i}`));
    // The order pg-boss fetches in (priority desc, then creation): A and B alternate, A's first
    // (queued first), then the rest of A's backlog.
    expect((await fetchOrder(server.db)).join(' ')).toBe('A1 B0 A2 B1 A3 B2 A4 B3 A5 A6 A7');
    await serveUntil(ai, () =>
      allSucceeded(
        server.db,
        bJobs.map((job) => job.id),
      ),
    );
    // B's last job started before the last three of A's backlog (when they have started at all).
    for (const later of ['A5', 'A6', 'A7']) expect(startedBefore(ai.arrivals, 'B3', later), later).toBe(true);
    ai.answerAll();
  }, 120_000);

  it('the organizations one user owns take one turn per round between them, not one each', async () => {
    const a = await tenant(server);
    const x = await secondOrganization(server, a);
    const b = await tenant(server);
    ai.arrivals.length = 0;
    ai.hold();
    await embed(a, 'A0');
    await ai.untilHeld(1);
    for (let i = 1; i < 4; i++) await embed(a, `A${i}`);
    for (let i = 1; i < 4; i++) await embed(x, `X${i}`);
    for (let i = 0; i < 3; i++) await embed(b, `B${i}`);
    // Per organization, X would take a turn of its own in every round (A1 X1 B0 A2 X2 B1 ...),
    // and B would wait twice as long. One owner, one payer: X's jobs queue behind A's.
    expect((await fetchOrder(server.db)).join(' ')).toBe('A1 B0 A2 B1 A3 B2 X1 X2 X3');
    ai.answerAll();
    await serveUntil(ai, async () => (await queuedCount(server.db, a.org)) + (await queuedCount(server.db, x.org)) + (await queuedCount(server.db, b.org)) === 0 && (await runningCount(server)) === 0);
  }, 120_000);
});

/** Another organization owned by `t`'s owner (owner first there too), with a workspace. */
async function secondOrganization(server: TestServer, t: Tenant): Promise<Tenant> {
  const org = await addMembership(server.db, t.owner, 'owner');
  const client = clientOf(server, t.owner);
  const workspace = await client.workspaces.create({ organizationId: org, name: 'Second', slug: `second-${org.slice(-12)}` });
  return { owner: t.owner, org, workspaceId: workspace.id, client };
}

/** Whether `first` started, and `second` after it or not yet. */
function startedBefore(arrivals: string[], first: string, second: string): boolean {
  const at = arrivals.indexOf(first);
  const other = arrivals.indexOf(second);
  return at >= 0 && (other === -1 || other > at);
}

async function runningCount(server: TestServer): Promise<number> {
  const [row] = await server.db.sql<{ count: number }[]>`select count(*)::int as count from jobs where status = 'running'`;
  return row!.count;
}

describe("the cap on an organization's queued jobs", () => {
  let server: TestServer;

  beforeAll(async () => {
    // No worker: jobs stay queued, so the count is the test's.
    server = await startTestServer({ env: { WORKER: 'off', MAX_QUEUED_JOBS_PER_ORGANIZATION: '3', RATE_LIMIT_PER_MINUTE: '100000' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  const embed = (t: Tenant) => t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['x'] } });

  it('past the cap jobs.create answers 429 with Retry-After and charges nothing; a cancel frees a slot; other organizations are not affected', async () => {
    const a = await tenant(server);
    const b = await tenant(server);
    const jobs = [await embed(a), await embed(a), await embed(a)];
    const refused = await server.fetch('/api/v1/jobs', {
      method: 'POST',
      headers: { authorization: `Bearer ${a.owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ organizationId: a.org, kind: 'text.embed', input: { texts: ['x'] } }),
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toEqual({
      defined: true,
      code: 'TOO_MANY_REQUESTS',
      status: 429,
      message: "The organizations of this organization's owner have 3 queued jobs, the most they may have (3); try again once some have run.",
    });
    expect(await creditsSpent(server, a.org)).toBe(3);
    expect(await queuedCount(server.db, a.org)).toBe(3);
    // The typed client sees the declared error.
    const error = await embed(a).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiClientError);
    expect(error).toMatchObject({ status: 429, code: 'TOO_MANY_REQUESTS', defined: true, retryAfterSeconds: 10 });

    // Another organization has its own count.
    await embed(b);
    // A canceled job is no longer queued: its slot is free again.
    await a.client.jobs.cancel({ id: jobs[0]!.id });
    await embed(a);
    await expect(embed(a)).rejects.toMatchObject({ status: 429 });
  }, 60_000);

  it("past the cap, Retry-After is the time one job takes to start at the pace the organization's jobs have been starting", async () => {
    const a = await tenant(server);
    const startAll = () => server.db.sql`update jobs set status = 'running', started_at = ${new Date()} where organization_id = ${a.org} and status = 'queued'`;
    // Five rounds of the cap, each started as a worker would start them: 15 starts in the last 30 s.
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 3; i++) await embed(a);
      await startAll();
    }
    for (let i = 0; i < 3; i++) await embed(a);
    await expect(embed(a)).rejects.toMatchObject({ status: 429, code: 'TOO_MANY_REQUESTS', retryAfterSeconds: 2 });
    // The same starts half a minute ago: nothing is moving now, so the longest hint.
    await server.db.sql`update jobs set started_at = started_at - interval '31 seconds' where organization_id = ${a.org} and started_at is not null`;
    await expect(embed(a)).rejects.toMatchObject({ status: 429, retryAfterSeconds: QUEUE_FULL_RETRY_AFTER_SECONDS });
    expect([0, 1, 3, 15, 30, 300].map(queueFullRetryAfter)).toEqual([QUEUE_FULL_RETRY_AFTER_SECONDS, 10, 10, 2, 1, 1]);
  }, 60_000);

  it("one owner's organizations share the cap: a second organization of A's owner is full too", async () => {
    const a = await tenant(server);
    const x = await secondOrganization(server, a);
    for (let i = 0; i < 3; i++) await embed(a);
    await expect(embed(x)).rejects.toMatchObject({ status: 429, code: 'TOO_MANY_REQUESTS' });
    expect(await creditsSpent(server, x.org)).toBe(0);
    // An organization the same user joined as a member is another owner's: its own turn and cap.
    const b = await tenant(server);
    await addMembership(server.db, a.owner, 'member', b.org);
    await embed({ ...b, client: clientOf(server, a.owner) });
    expect(await queuedCount(server.db, b.org)).toBe(1);
  }, 60_000);
});

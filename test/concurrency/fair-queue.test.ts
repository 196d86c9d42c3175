/**
 * Fair service and the cap on queued jobs, on a real PostgreSQL (`scripts/test-pg.sh`; skipped on
 * the embedded database, whose suite is test/jobs/fairness.test.ts):
 *
 * - worker processes (`main.ts worker`, one job at a time each; two, or TEST_WORKERS) serve organization A's backlog
 *   of long jobs; B and C then queue one job each, and start right after the next job of A's,
 *   not after A's backlog. Jobs last until the test answers their AI request
 *   (test/jobs/fairness-support.ts), so the assertions are on the order jobs started in.
 * - concurrent jobs.create of one organization, in real parallel transactions, are admitted
 *   exactly up to MAX_QUEUED_JOBS_PER_ORGANIZATION, the rest answered 429 with nothing charged;
 *   and concurrent creates of one organization never take the same place in the fair queue.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrlOf, externalDatabaseUrl } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { spawnService, type ServiceProcess } from '../support/processes.ts';
import { creditsSpent, tenant, type Tenant } from '../jobs/support.ts';
import { allSucceeded, fetchOrder, heldEmbeddings, queuedCount, serveUntil, type HeldEmbeddings } from '../jobs/fairness-support.ts';
import { BURST_ENV, burst, clientFor, expectOnly, succeeded, workerProcesses } from './support.ts';

const BACKLOG = 20;
const WORKERS = workerProcesses(2);

const embed = (t: Tenant, label: string) => t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: [label] } });

describe.skipIf(!externalDatabaseUrl)('fair service with several worker processes', () => {
  let server: TestServer;
  let ai: HeldEmbeddings;
  const workers: ServiceProcess[] = [];

  beforeAll(async () => {
    ai = await heldEmbeddings();
    // The API alone (WORKER=off): only the spawned workers run jobs.
    server = await startTestServer({ aiService: false, env: { ...BURST_ENV, WORKER: 'off', AI_URL: ai.url } });
    for (let i = 0; i < WORKERS; i++) {
      workers.push(spawnService('worker', { DATABASE_URL: databaseUrlOf(server.db)!, AI_URL: ai.url, WORKER_CONCURRENCY: '1', WORKER_BATCH_SIZE: '1' }));
    }
    for (const worker of workers) await worker.logged('job worker started');
  });
  afterAll(async () => {
    await ai?.close();
    for (const worker of workers) await worker.stop();
    await server?.close();
  });

  it("B's and C's jobs start right after A's next one, and succeed while A's backlog waits", async () => {
    const a = await tenant(server);
    const b = await tenant(server);
    const c = await tenant(server);
    // One of A's jobs running on each worker (held by the AI stand-in), then the rest of A's backlog.
    for (let i = 0; i < WORKERS; i++) {
      await embed(a, `A${i}`);
      await ai.untilHeld(i + 1);
    }
    for (let i = WORKERS; i < BACKLOG; i++) await embed(a, `A${i}`);
    const bJob = await embed(b, 'B0');
    const cJob = await embed(c, 'C0');
    const rest = Array.from({ length: BACKLOG - WORKERS - 1 }, (_, i) => `A${WORKERS + 1 + i}`);
    expect(await fetchOrder(server.db)).toEqual([`A${WORKERS}`, 'B0', 'C0', ...rest]);

    await serveUntil(ai, () => allSucceeded(server.db, [bJob.id, cJob.id]));

    // First come, first served would start them after all BACKLOG of A's. Fair: the fetch order
    // (with two workers) is A2 B0 C0 A3 A4 ... (B and C tie with A's next job, which was queued
    // first). WORKERS workers fetch up to WORKERS at a time, and of jobs fetched at once any
    // request may arrive first, so each may arrive up to WORKERS - 1 places later than fetched.
    const started = ai.arrivals;
    expect(started.slice(0, WORKERS).sort()).toEqual(Array.from({ length: WORKERS }, (_, i) => `A${i}`).sort());
    expect(started.indexOf('B0'), started.join(' ')).toBeLessThanOrEqual(WORKERS + 1 + (WORKERS - 1));
    expect(started.indexOf('C0'), started.join(' ')).toBeLessThanOrEqual(WORKERS + 2 + (WORKERS - 1));
    // A's job WORKERS + 1 places after C0 in the fetch order (A5 with two workers) was fetched
    // once C0's had run, since each worker runs one job at a time (or was not fetched yet).
    const later = started.indexOf(`A${2 * WORKERS + 1}`);
    expect(later === -1 || later > started.indexOf('C0')).toBe(true);
    // Both succeeded while most of A's backlog still waits.
    expect(await queuedCount(server.db, a.org)).toBeGreaterThanOrEqual(BACKLOG / 2);
    ai.answerAll();
  }, 120_000);
});

describe.skipIf(!externalDatabaseUrl)('the cap on queued jobs under concurrency', () => {
  let server: TestServer;

  beforeAll(async () => {
    // No worker: jobs stay queued.
    server = await startTestServer({ env: { ...BURST_ENV, WORKER: 'off', MAX_QUEUED_JOBS_PER_ORGANIZATION: '7' } });
    expect(server.db.kind).toBe('external');
  });
  afterAll(() => server?.close());

  it('30 concurrent creates admit exactly 7, the rest 429 with nothing charged; each admitted job has its own place', async () => {
    const t = await tenant(server);
    const api = clientFor(server, t.owner);
    const outcomes = await burst(Array.from({ length: 30 }, (_, i) => () => api.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: [`x${i}`] } })));
    expectOnly(outcomes, ['TOO_MANY_REQUESTS']);
    expect(succeeded(outcomes)).toHaveLength(7);
    expect(await queuedCount(server.db, t.org)).toBe(7);
    expect(await creditsSpent(server, t.org)).toBe(7);
    // Serialized per organization: 0 to 6, no tie (no worker took any, so V stays 0).
    const places = await server.db.sql<{ start: number }[]>`select queue_start as start from jobs where organization_id = ${t.org} order by queue_start`;
    expect(places.map((row) => row.start)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  }, 60_000);
});

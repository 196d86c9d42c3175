/**
 * Job changes racing each other and the worker, the way production runs: API instances (two, or
 * TEST_API_INSTANCES; each with its own pool on `make test-pg`'s real server) and a worker in one of them, with billing
 * configured (the organization row is locked by every charge) and without. jobs.create, retry and
 * cancel answer 200 or their declared 4xx, never a 500 (a deadlock once answered 500 to most of a
 * burst of creates); a failed job is retried once however many retries race; and afterwards the
 * ledger balances against the jobs: each job's charges minus its refunds are its credits, or 0
 * for a job cancelled before any attempt started.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { createTestDatabase, externalDatabaseUrl } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { waitForJob } from '../jobs/support.ts';
import { apiInstances, BURST_ENV, burst, clientFor, expectOnly, instanceClients, settablePlans, succeeded } from './support.ts';

const { plans, limits } = settablePlans();
/** The least MAX_EXTRACTED_CHARACTERS allows. */
const MAX_CHARACTERS = 1000;
let db: Database;
let clients: Database[] = [];
const servers: TestServer[] = [];
/** The first instance, the one with the worker. */
let a: TestServer;

beforeAll(async () => {
  db = await createTestDatabase();
  clients = await instanceClients(db, apiInstances(2));
  // A runs the worker (with the real companion AI service); the others only answer requests.
  // MAX_EXTRACTED_CHARACTERS at its least makes failedJob's job fail without an extraction thread.
  a = await startTestServer({ db, env: { ...BURST_ENV, WORKER_CONCURRENCY: '4', MAX_EXTRACTED_CHARACTERS: String(MAX_CHARACTERS) }, overrides: { plans, queue: { pollingSeconds: 0.5 } } });
  servers.push(a);
  for (const client of clients.slice(1)) {
    servers.push(await startTestServer({ db: client, aiService: false, env: { ...BURST_ENV, WORKER: 'off', AI_URL: 'http://127.0.0.1:9' }, overrides: { plans } }));
  }
  if (externalDatabaseUrl) expect(new Set(servers.map((server) => server.db.sql)).size).toBe(servers.length);
}, 60_000);
afterAll(async () => {
  for (const server of servers) await server.close();
  for (const client of clients.slice(1)) await client.close();
  await db?.close();
});

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

interface Org {
  id: string;
  owner: TestUser;
  workspaceId: string;
}

async function organization(billing: boolean): Promise<Org> {
  const owner = await createUser(a.db);
  const id = await addMembership(a.db, owner, 'owner');
  if (billing) limits.set(id, { aiCredits: 100_000 });
  const workspace = await clientFor(a, owner).workspaces.create({ organizationId: id, name: 'Races', slug: `races-${Date.now()}` });
  return { id, owner, workspaceId: workspace.id };
}

/** The instance a call goes to: round-robin over all, call 0 to A. */
const api = (org: Org, i: number) => clientFor(servers[i % servers.length]!, org.owner);

/**
 * A document whose extraction fails at once, for good (its text is longer than A's
 * MAX_EXTRACTED_CHARACTERS), so its job ends `failed`. Plain text, which the AI service decodes on
 * its own thread: an unreadable PDF would start an extraction thread (about 0.2 s of CPU) for
 * every attempt, a third of this file's CPU.
 */
async function failedJob(org: Org): Promise<string> {
  const client = api(org, 0);
  const bytes = new TextEncoder().encode('too long to be stored. '.repeat(MAX_CHARACTERS / 20));
  const { document, upload } = await client.documents.createUpload({ organizationId: org.id, workspaceId: org.workspaceId, name: 'too-long.txt', contentType: 'text/plain', size: bytes.byteLength });
  expect((await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  await client.documents.complete({ id: document.id });
  const job = await client.jobs.create({ organizationId: org.id, kind: 'document.extract', documentId: document.id });
  expect(await waitForJob({ client }, job.id)).toMatchObject({ status: 'failed', error: { message: expect.stringMatching(/has more than [\d,]+ characters/) } });
  return job.id;
}

async function settled(org: Org, id: string): Promise<string> {
  return (await waitForJob({ client: api(org, 0) }, id)).status;
}

async function allSettled(org: Org): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const [row] = await a.db.sql<{ open: number }[]>`select count(*)::int as open from jobs where organization_id = ${org.id} and status in ('queued', 'running')`;
    if (row!.open === 0) return;
    if (Date.now() > deadline) throw new Error(`${row!.open} jobs of ${org.id} still open`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Every job's ledger rows against the job: charges minus refunds equal its credits, except for a
 * job cancelled before any attempt started, whose rows sum to 0; and the organization's ledger
 * holds nothing else.
 */
async function expectLedgerBalances(org: Org): Promise<void> {
  const rows = await a.db.sql<{ id: string; status: string; attempt: number; credits: number; charged: number; refunded: number }[]>`
    select j.id, j.status, j.attempt, j.credits,
           coalesce(sum(l.amount) filter (where l.amount > 0), 0)::int as charged,
           coalesce(-sum(l.amount) filter (where l.amount < 0), 0)::int as refunded
    from jobs j left join credit_ledger l on l.job_id = j.id
    where j.organization_id = ${org.id}
    group by j.id`;
  for (const job of rows) {
    expect(job.charged, JSON.stringify(job)).toBe(job.credits);
    expect(job.refunded, JSON.stringify(job)).toBe(job.status === 'canceled' && job.attempt === 0 ? job.credits : 0);
  }
  const [ledger] = await a.db.sql<{ total: number; orphans: number }[]>`
    select coalesce(sum(amount), 0)::int as total, count(*) filter (where job_id is null)::int as orphans
    from credit_ledger where organization_id = ${org.id}`;
  expect(ledger!.orphans).toBe(0);
  expect(ledger!.total).toBe(rows.reduce((sum, job) => sum + job.charged - job.refunded, 0));
}

describe.each([
  { billing: true, label: 'billing configured' },
  { billing: false, label: 'billing not configured' },
])('job changes racing across instances and a worker ($label)', ({ billing }) => {
  it('30 concurrent creates while the worker runs them: all 200', async () => {
    const org = await organization(billing);
    const outcomes = await burst(range(30).map((i) => () => api(org, i).jobs.create({ organizationId: org.id, kind: 'text.embed', input: { texts: [`race ${i}`] } })));
    expect(succeeded(outcomes)).toHaveLength(30);
    await allSettled(org);
    await expectLedgerBalances(org);
  });

  it('6 concurrent retries of one failed job: one new job, five 409s', async () => {
    const org = await organization(billing);
    const failed = await failedJob(org);
    const outcomes = await burst(range(6).map((i) => () => api(org, i).jobs.retry({ id: failed })));
    expectOnly(outcomes, ['CONFLICT']);
    const retries = succeeded(outcomes);
    expect(retries).toHaveLength(1);
    expect(retries[0]!.retryOf).toBe(failed);
    // Once retried, always 409; the retry itself can be retried in turn once it has failed.
    await expect(api(org, 1).jobs.retry({ id: failed })).rejects.toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(await settled(org, retries[0]!.id)).toBe('failed');
    expect((await api(org, 0).jobs.retry({ id: retries[0]!.id })).retryOf).toBe(retries[0]!.id);
    await allSettled(org);
    const [count] = await a.db.sql<{ n: number }[]>`select count(*)::int as n from jobs where retry_of = ${failed}`;
    expect(count!.n).toBe(1);
    await expectLedgerBalances(org);
  });

  it('a mixed burst of creates, cancels and retries: only declared answers, and the ledger balances', async () => {
    const org = await organization(billing);
    const failed = await Promise.all(range(3).map(() => failedJob(org)));
    const created = succeeded(await burst(range(20).map((i) => () => api(org, i).jobs.create({ organizationId: org.id, kind: 'text.embed', input: { texts: [`first ${i}`] } }))));
    expect(created).toHaveLength(20);
    const calls = [
      ...range(20).map((i) => () => api(org, i).jobs.create({ organizationId: org.id, kind: 'text.embed', input: { texts: [`second ${i}`] } })),
      // Each queued job cancelled twice, on two different instances: one of the two (at most) refunds.
      ...created.flatMap((job, i) => [() => api(org, i).jobs.cancel({ id: job.id }), () => api(org, i + 1).jobs.cancel({ id: job.id })]),
      ...failed.flatMap((id) => range(3).map((i) => () => api(org, i).jobs.retry({ id }))),
    ];
    const outcomes = await burst(calls.sort(() => Math.random() - 0.5));
    expectOnly(outcomes, ['CONFLICT']);
    await allSettled(org);
    const [retries] = await a.db.sql<{ n: number }[]>`select count(*)::int as n from jobs where retry_of in ${a.db.sql(failed)}`;
    expect(retries!.n).toBe(3);
    await expectLedgerBalances(org);
  });
});

/**
 * workspace.index (workspace-index.ts, docs/jobs.md "Indexing a workspace"), with the real worker,
 * AI service and model on the test's database (embedded, or PostgreSQL under scripts/test-pg.sh):
 * one job over a workspace's documents, charged per document and refunded for the ones it did not
 * index (a failure, one deleted meanwhile, the rest of a canceled job), its progress counted on the
 * job, in slices that take turns with other organizations' jobs; a second run has nothing to do.
 * The AI service down: the job is retried and fails as a whole, and gives everything back; one the
 * previous release's worker failed is settled by housekeeping.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { creditsSpent, tenant, uploadDocument, waitForJob, type Tenant } from './support.ts';

const text = (value: string) => new TextEncoder().encode(value);
const TOPICS = ['ferries', 'tides', 'lighthouses', 'harbour dues', 'fishing quotas', 'sea fog', 'salt marsh', 'lifeboats', 'moorings', 'breakwaters'];

async function uploadNotes(t: Tenant, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const topic = TOPICS[i % TOPICS.length]!;
    const document = await uploadDocument(t, `note-${i}.txt`, 'text/plain', text(`Note ${i} of the harbour office is about ${topic}. It is read by the harbour master every morning.`));
    ids.push(document.id);
  }
  return ids;
}

async function jobDocumentStates(server: TestServer, jobId: string): Promise<Record<string, number>> {
  const rows = await server.db.sql<{ state: string; count: number }[]>`select state, count(*)::int as count from job_documents where job_id = ${jobId} group by state`;
  return Object.fromEntries(rows.map((row) => [row.state, row.count]));
}

describe('workspace.index', () => {
  let server: TestServer;

  beforeAll(async () => {
    // Slices of one round of documents: the job continues several times even in a small workspace.
    server = await startTestServer({ env: { WORKER_CONCURRENCY: '1', RATE_LIMIT_PER_MINUTE: '100000' }, overrides: { sliceMs: 1 } });
  });
  afterAll(() => server?.close());

  it('indexes every document in one job, reports progress, refunds a failure, and finds them', async () => {
    const t = await tenant(server);
    const notes = await uploadNotes(t, 9);
    // Says it is a PDF and is not: its extraction fails, the others go on.
    const broken = await uploadDocument(t, 'broken.pdf', 'application/pdf', text('not a pdf'));
    const created = await t.client.jobs.create({ organizationId: t.org, kind: 'workspace.index', workspaceId: t.workspaceId });
    expect(created).toMatchObject({ kind: 'workspace.index', workspaceId: t.workspaceId, documentId: null, credits: 20, progress: { documents: 10, done: 0, failed: 0 } });
    expect(await creditsSpent(server, t.org)).toBe(20);

    const job = await waitForJob(t, created.id);
    expect(job).toMatchObject({ status: 'succeeded', credits: 18, progress: { documents: 10, done: 10, failed: 1 } });
    expect(job.result).toEqual({
      documents: 10,
      indexed: 9,
      unchanged: 0,
      gone: 0,
      failed: 1,
      chunks: expect.any(Number),
      model: expect.any(String),
      failures: [{ documentId: broken.id, message: expect.stringMatching(/./) }],
    });
    expect(await creditsSpent(server, t.org)).toBe(18);
    // Slices: more than one queue entry for the job (continued), all of them done.
    const [slices] = await server.db.sql<{ count: number }[]>`select count(*)::int as count from pgboss.job where data->>'jobId' = ${job.id}`;
    expect(slices!.count).toBeGreaterThan(1);

    const documents = await t.client.documents.list({ organizationId: t.org, workspaceId: t.workspaceId, limit: 100 });
    for (const id of notes) expect(documents.items.find((document) => document.id === id)?.indexedAt).toBeTruthy();
    const answer = await t.client.documents.search({ workspaceId: t.workspaceId, query: 'lighthouses', limit: 3 });
    expect(answer.results.map((result) => result.documentId)).toContain(notes[2]);

    // Everything is indexed: the next run has nothing to do (the broken file is tried again, it
    // is still not indexed) and costs only that.
    const again = await t.client.jobs.create({ organizationId: t.org, kind: 'workspace.index', workspaceId: t.workspaceId });
    expect(again).toMatchObject({ credits: 2, progress: { documents: 1, done: 0, failed: 0 } });
    expect(await waitForJob(t, again.id)).toMatchObject({ status: 'succeeded', credits: 0, result: { documents: 1, failed: 1 } });
    await t.client.documents.delete({ id: broken.id });
    const nothing = await t.client.jobs.create({ organizationId: t.org, kind: 'workspace.index', workspaceId: t.workspaceId });
    expect(nothing).toMatchObject({ credits: 0, progress: { documents: 0, done: 0, failed: 0 } });
    expect(await waitForJob(t, nothing.id)).toMatchObject({ status: 'succeeded', credits: 0, result: { documents: 0, indexed: 0, failed: 0, chunks: 0, failures: [] } });
    expect(await creditsSpent(server, t.org)).toBe(18);
  });

  it('a document deleted before its turn is counted as gone and refunded', async () => {
    const t = await tenant(server);
    const notes = await uploadNotes(t, 12);
    const created = await t.client.jobs.create({ organizationId: t.org, kind: 'workspace.index', workspaceId: t.workspaceId });
    // The last in id order: a slice takes IN_FLIGHT (8), so it is not reached before this delete.
    const last = [...notes].sort().at(-1)!;
    await t.client.documents.delete({ id: last });
    const job = await waitForJob(t, created.id);
    expect(job).toMatchObject({ status: 'succeeded', credits: 22, result: { documents: 12, indexed: 11, gone: 1, failed: 0 } });
    expect(await creditsSpent(server, t.org)).toBe(22);
  });

  it('a running job cancels: it keeps what it indexed and refunds the rest', async () => {
    const t = await tenant(server);
    await uploadNotes(t, 24);
    const created = await t.client.jobs.create({ organizationId: t.org, kind: 'workspace.index', workspaceId: t.workspaceId });
    // Running, some documents done: cancel between two slices or during one.
    let running = await t.client.jobs.get({ id: created.id });
    while (!(running.status === 'running' && running.progress!.done > 0)) {
      expect(running.status).toMatch(/queued|running/);
      await new Promise((resolve) => setTimeout(resolve, 20));
      running = await t.client.jobs.get({ id: created.id });
    }
    const canceled = await t.client.jobs.cancel({ id: created.id });
    expect(canceled.status).toBe('canceled');
    expect(canceled.progress!.done).toBeLessThan(24);
    // Whatever was in hand finishes and keeps its charge; nothing more starts.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const states = await jobDocumentStates(server, created.id);
    expect(states.pending).toBeUndefined();
    expect(states.canceled).toBeGreaterThan(0);
    const indexed = states.indexed ?? 0;
    const after = await t.client.jobs.get({ id: created.id });
    expect(after.status).toBe('canceled');
    expect(after.credits).toBe(2 * indexed);
    expect(await creditsSpent(server, t.org)).toBe(2 * indexed);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await jobDocumentStates(server, created.id)).indexed ?? 0).toBe(indexed);
    // Not queued or running: a second cancel is a conflict.
    await expect(t.client.jobs.cancel({ id: created.id })).rejects.toMatchObject({ status: 409, code: 'CONFLICT' });
  });

  it("another organization's job runs between its slices", async () => {
    const a = await tenant(server);
    const b = await tenant(server);
    await uploadNotes(a, 32);
    const big = await a.client.jobs.create({ organizationId: a.org, kind: 'workspace.index', workspaceId: a.workspaceId });
    await waitForJob(a, big.id, ['running']);
    const small = await b.client.jobs.create({ organizationId: b.org, kind: 'text.embed', input: { texts: ['a quick one'] } });
    expect((await waitForJob(b, small.id)).status).toBe('succeeded');
    // B's job did not wait for A's 32 documents.
    const meanwhile = await a.client.jobs.get({ id: big.id });
    expect(meanwhile.progress!.done).toBeLessThan(32);
    expect(await waitForJob(a, big.id)).toMatchObject({ status: 'succeeded', result: { indexed: 32 } });
  });

  it('a workspace of another organization is not found', async () => {
    const a = await tenant(server);
    const b = await tenant(server);
    await expect(a.client.jobs.create({ organizationId: a.org, kind: 'workspace.index', workspaceId: b.workspaceId })).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' });
    await expect(a.client.jobs.create({ organizationId: a.org, kind: 'workspace.index', workspaceId: 'ws_aaaaaaaaaaaaaaaaaaaaaaaa' })).rejects.toMatchObject({ status: 404 });
    expect(await creditsSpent(server, a.org)).toBe(0);
  });
});

describe('workspace.index with the AI service down', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ aiService: false, env: { AI_URL: 'http://127.0.0.1:9' }, overrides: { queue: { retryDelaySeconds: 1, pollingSeconds: 0.5 } } });
  });
  afterAll(() => server?.close());

  it('is retried as a whole, then fails and refunds every document', async () => {
    const t = await tenant(server);
    await uploadNotes(t, 3);
    const created = await t.client.jobs.create({ organizationId: t.org, kind: 'workspace.index', workspaceId: t.workspaceId });
    expect(created.credits).toBe(6);
    const job = await waitForJob(t, created.id);
    expect(job).toMatchObject({ status: 'failed', credits: 0, attempt: 3, error: { message: expect.stringMatching(/AI service/i) } });
    expect(await creditsSpent(server, t.org)).toBe(0);
    expect(await jobDocumentStates(server, created.id)).toEqual({ canceled: 3 });
  });

  it("housekeeping settles a job the previous release's worker failed without knowing its documents", async () => {
    const t = await tenant(server);
    await uploadNotes(t, 2);
    await server.services.queue.stop(); // no worker from here on
    const created = await t.client.jobs.create({ organizationId: t.org, kind: 'workspace.index', workspaceId: t.workspaceId });
    // What that release's failRun does to a kind it does not know: failed, nothing else.
    await server.db.sql`update jobs set status = 'failed', error_message = 'The job failed.', finished_at = now() where id = ${created.id}`;
    expect(await creditsSpent(server, t.org)).toBe(4);
    expect(await server.services.jobs.settleStopped(new Date())).toBeGreaterThanOrEqual(1);
    expect(await creditsSpent(server, t.org)).toBe(0);
    expect(await jobDocumentStates(server, created.id)).toEqual({ canceled: 2 });
    expect(await t.client.jobs.get({ id: created.id })).toMatchObject({ status: 'failed', credits: 0 });
    // Once only: nothing is left to settle or refund.
    expect(await server.services.jobs.settleStopped(new Date())).toBe(0);
  });
});

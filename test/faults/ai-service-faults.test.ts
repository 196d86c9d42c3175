/**
 * The companion AI service failing, and what every caller sees (docs/jobs.md, Retries; Search):
 *
 * 1. Down (AI_URL on a closed port), then back (the real AI service started on that port): a
 *    text.embed and a document.index job each go back to `queued` with their attempt counted and
 *    wait out the outage; documents.search answers its declared 503 SERVICE_UNAVAILABLE and charges
 *    nothing; the rest of the API keeps answering; once the service is back both jobs succeed,
 *    charged once, and search works again.
 * 2. Answering garbage (a stand-in): 200 with invalid JSON, 200 with vectors of the wrong size,
 *    too few vectors or no data, a 500, and no answer at all (the client's own deadline, cut to
 *    1 s here through its `timeoutMs`, ends the wait). Every job run ends retried twice, then
 *    `failed` with the readable message (the provider's detail only in the log); no job is left
 *    running or queued; every job's ledger adds up to its credits, charged once; an index job
 *    whose vectors were unusable stores no chunk; search answers 503 and charges nothing.
 *    No caller ever gets a 500.
 *
 * A worker killed mid-job (the other way a job can be cut short) is test/concurrency/worker-kill.test.ts.
 * Runs on the embedded database (`make test`) and on PostgreSQL (`make test-pg`).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import { createAiClient } from '../../src/ai-service/client.ts';
import { startAiService, type AiService } from '../../src/ai-service/server.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { closedPort } from '../support/ports.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { creditsSpent, tenant, uploadDocument, waitForJob, type Tenant } from '../jobs/support.ts';
import { eventually } from './support.ts';
import { expectNoInternalErrors, expectSettledAndBalanced, statusHistory, withDeadline } from './service-faults-support.ts';

const UNAVAILABLE = 'The AI service is unavailable, try again later.';
const LOCAL_MODEL = 'all-MiniLM-L6-v2';
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );
const text = (value: string) => new TextEncoder().encode(value);

describe('the AI service down, then back', () => {
  let server: TestServer;
  let ai: AiService | undefined;
  let port: number;
  let t: Tenant;

  beforeAll(async () => {
    port = await closedPort();
    server = await startTestServer({
      aiService: false,
      env: { AI_URL: `http://127.0.0.1:${port}`, RATE_LIMIT_PER_MINUTE: '100000' },
      // Retries after 3-6 s, then 6-12 s: time to see the job waiting, and to bring the service back before the last try.
      overrides: { queue: { retryDelaySeconds: 3, pollingSeconds: 0.5 } },
    });
    t = await tenant(server);
  });
  afterAll(async () => {
    await server?.close();
    await ai?.close();
  });

  it('jobs wait out the outage and succeed once it is back; search answers 503 meanwhile; nothing charged twice', { timeout: 90_000 }, async () => {
    const document = await uploadDocument(t, 'revenue.txt', 'text/plain', text('Quarterly revenue grew by a tenth, driven by the new subscription plans.'));
    const embed = await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['revenue'] } });
    const index = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id });

    // Each ran, failed and went back to the queue for a retry, its attempt counted.
    for (const id of [embed.id, index.id]) {
      const waiting = await eventually(async () => {
        const job = await t.client.jobs.get({ id });
        return job.status === 'queued' && job.attempt >= 1 ? job : undefined;
      }, 50);
      expect(waiting).toMatchObject({ status: 'queued', error: null, finishedAt: null });
      expect((await statusHistory(server.db, id)).slice(0, 3)).toEqual(['queued', 'running', 'queued']);
    }
    expect(await creditsSpent(server, t.org)).toBe(3);

    // Meanwhile search answers its declared 503 and charges nothing; everything else answers.
    const refused = await failure(t.client.documents.search({ workspaceId: t.workspaceId, query: 'revenue' }));
    expect(refused).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', message: UNAVAILABLE, defined: true });
    expect(await creditsSpent(server, t.org)).toBe(3);
    expect((await t.client.workspaces.list({ organizationId: t.org })).map((w) => w.id)).toContain(t.workspaceId);
    expect(await t.client.documents.get({ id: document.id })).toMatchObject({ status: 'ready' });
    expect((await fetch(`${server.origin}/readyz`)).status).toBe(200);

    // The real service comes back on the same address.
    ai = await startAiService({ settings: loadConfig({}).ai, host: '127.0.0.1', port, logger: createLogger('silent') });

    const embedded = await waitForJob(t, embed.id, ['succeeded', 'failed'], 60_000);
    expect(embedded).toMatchObject({ status: 'succeeded', credits: 1, error: null, result: { model: LOCAL_MODEL } });
    expect(embedded.attempt).toBeGreaterThanOrEqual(2);
    expect(embedded.attempt).toBeLessThanOrEqual(3);
    expect((embedded.result as { vectors: number[][] }).vectors.map((vector) => vector.length)).toEqual([384]);
    const indexed = await waitForJob(t, index.id, ['succeeded', 'failed'], 60_000);
    expect(indexed).toMatchObject({ status: 'succeeded', credits: 2, error: null, result: { chunks: 1, model: LOCAL_MODEL } });
    expect(indexed.attempt).toBeGreaterThanOrEqual(2);
    for (const id of [embed.id, index.id]) {
      const history = await statusHistory(server.db, id);
      expect(history).not.toContain('failed');
      expect(history.at(-1)).toBe('succeeded');
    }
    await expectSettledAndBalanced(server.db, t.org);
    expect(await creditsSpent(server, t.org)).toBe(3);

    // Search works again (the local model costs nothing) and finds the indexed document.
    const found = await t.client.documents.search({ workspaceId: t.workspaceId, query: 'How did revenue change?' });
    expect(found.model).toBe(LOCAL_MODEL);
    expect(found.results[0]).toMatchObject({ documentId: document.id });
    expect(await creditsSpent(server, t.org)).toBe(3);
    expectNoInternalErrors(server.logs);
  });
});

/** What the stand-in does when a text (embeddings) or a document (extract) carries `embed:<fault>` or `extract:<fault>`. */
type Fault = 'invalid-json' | 'wrong-dimension' | 'too-few' | 'missing-data' | 'missing-text' | 'server-error' | 'hang';

const EMBED_FAULTS: { fault: Fault; detail: string }[] = [
  { fault: 'invalid-json', detail: 'unexpected body: the answer has no data array' },
  { fault: 'wrong-dimension', detail: 'embedding 0 has 3 dimensions, not 384' },
  { fault: 'too-few', detail: 'the answer has 0 embeddings for 1 inputs' },
  { fault: 'missing-data', detail: 'unexpected body: the answer has no data array' },
  { fault: 'server-error', detail: 'answered 500' },
  { fault: 'hang', detail: 'no answer within 1000 ms' },
];

const EXTRACT_FAULTS: { fault: Fault; detail: string }[] = [
  { fault: 'invalid-json', detail: 'unexpected body: no text' },
  { fault: 'missing-text', detail: 'unexpected body: no text' },
  { fault: 'server-error', detail: 'answered 500' },
  { fault: 'hang', detail: 'no answer within 1000 ms' },
];

const SECRET = 'sk-stand-in-secret';

describe('the AI service answering garbage', () => {
  let standIn: Server;
  let server: TestServer;
  /** Requests per marker (`embed:hang`, `extract:server-error`, ...). */
  const requests = new Map<string, number>();

  beforeAll(async () => {
    standIn = createServer((req, res) => void answer(req, res));
    standIn.listen(0, '127.0.0.1');
    await once(standIn, 'listening');
    const url = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
    server = await startTestServer({
      aiService: false,
      env: { AI_URL: url, RATE_LIMIT_PER_MINUTE: '100000' },
      overrides: { ai: withDeadline(createAiClient({ url }), 1_000), queue: { retryDelaySeconds: 1, pollingSeconds: 0.5 } },
    });
  });
  afterAll(async () => {
    await server?.close();
    standIn?.closeAllConnections();
    standIn?.close();
  });

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    // No companion health route, like a hosted provider (the worker asks for it at start).
    if (req.method !== 'POST' || (req.url !== '/v1/embeddings' && req.url !== '/v1/extract')) {
      res.writeHead(404).end();
      return;
    }
    const embedding = req.url === '/v1/embeddings';
    const inputs: string[] = embedding ? JSON.parse(body).input : [body];
    const marker = new RegExp(`${embedding ? 'embed' : 'extract'}:([a-z-]+)`).exec(inputs.join(' '))?.[0];
    if (marker) requests.set(marker, (requests.get(marker) ?? 0) + 1);
    const fault = marker?.split(':')[1] as Fault | undefined;
    const json = (status: number, value: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(typeof value === 'string' ? value : JSON.stringify(value));
    };
    const vector = (size: number) => Array.from({ length: size }, (_, i) => Math.cos(i));
    switch (fault) {
      case 'hang':
        return; // never answers; closed with the server
      case 'invalid-json':
        return json(200, '{"data": [{"embedding": [0.1, ');
      case 'server-error':
        return json(500, { error: { message: `upstream exploded, key ${SECRET}`, type: 'server_error' } });
      case 'wrong-dimension':
        return json(200, { object: 'list', model: 'stand-in', data: inputs.map((_, index) => ({ object: 'embedding', index, embedding: vector(3) })) });
      case 'too-few':
        return json(200, { object: 'list', model: 'stand-in', data: [] });
      case 'missing-data':
        return json(200, { object: 'list', model: 'stand-in' });
      case 'missing-text':
        return json(200, { pages: 1 });
      default:
        return embedding
          ? json(200, { object: 'list', model: 'stand-in', data: inputs.map((_, index) => ({ object: 'embedding', index, embedding: vector(384) })), usage: { prompt_tokens: 1, total_tokens: 1 } })
          : json(200, { text: body, pages: null });
    }
  }

  /** The three runs of a job: two retried, the last final, each with the provider's detail in the log and never in the job. */
  function expectThreeRuns(jobId: string, detail: string): void {
    const runs = server.logs.filter((line) => line.msg === 'job run failed' && line.jobId === jobId);
    expect(runs.map((line) => [line.attempt, line.retryable, line.finalAttempt])).toEqual([
      [1, true, false],
      [2, true, false],
      [3, true, true],
    ]);
    for (const run of runs) expect(run.detail).toContain(detail);
  }

  it('text.embed: each unusable answer is retried twice, then fails with the readable message, charged once', { timeout: 90_000 }, async () => {
    const t = await tenant(server);
    const jobs = await Promise.all(EMBED_FAULTS.map(({ fault }) => t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: [`embed:${fault}`] } })));
    // A job held by the hung stand-in does not hold up the API.
    await eventually(async () => ((requests.get('embed:hang') ?? 0) > 0 ? true : undefined), 50);
    expect((await t.client.workspaces.list({ organizationId: t.org })).map((w) => w.id)).toEqual([t.workspaceId]);

    for (const [i, job] of jobs.entries()) {
      const { fault, detail } = EMBED_FAULTS[i]!;
      const settled = await waitForJob(t, job.id, ['succeeded', 'failed'], 60_000);
      expect(settled, fault).toMatchObject({ status: 'failed', attempt: 3, credits: 1, error: { message: UNAVAILABLE } });
      expect(settled).not.toHaveProperty('result');
      expect(requests.get(`embed:${fault}`), fault).toBe(3);
      expectThreeRuns(job.id, detail);
      expect(await statusHistory(server.db, job.id)).toEqual(['queued', 'running', 'queued', 'running', 'queued', 'running', 'failed']);
    }
    expect(JSON.stringify(await t.client.jobs.list({ organizationId: t.org }))).not.toContain(SECRET);
    await expectSettledAndBalanced(server.db, t.org);
    expect(await creditsSpent(server, t.org)).toBe(EMBED_FAULTS.length);
    expectNoInternalErrors(server.logs);
  });

  it('document.extract and document.index: garbage from either route fails the job the same way; no chunk is stored', { timeout: 90_000 }, async () => {
    const t = await tenant(server);
    const extracts = await Promise.all(
      EXTRACT_FAULTS.map(async ({ fault }) => {
        const document = await uploadDocument(t, `${fault}.txt`, 'text/plain', text(`Some words. extract:${fault}`));
        return t.client.jobs.create({ organizationId: t.org, kind: 'document.extract', documentId: document.id });
      }),
    );
    // Extraction works; the vectors of its one chunk are the wrong size.
    const indexed = await uploadDocument(t, 'index.txt', 'text/plain', text('Index me, please. embed:wrong-dimension'));
    const index = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: indexed.id });

    for (const [i, job] of extracts.entries()) {
      const { fault, detail } = EXTRACT_FAULTS[i]!;
      const settled = await waitForJob(t, job.id, ['succeeded', 'failed'], 60_000);
      expect(settled, fault).toMatchObject({ status: 'failed', attempt: 3, credits: 1, error: { message: UNAVAILABLE } });
      expect(requests.get(`extract:${fault}`), fault).toBe(3);
      expectThreeRuns(job.id, detail);
    }
    const settled = await waitForJob(t, index.id, ['succeeded', 'failed'], 60_000);
    expect(settled).toMatchObject({ status: 'failed', attempt: 3, credits: 2, error: { message: UNAVAILABLE } });
    expectThreeRuns(index.id, 'has 3 dimensions, not 384');
    const [chunks] = await server.db.sql<{ count: number }[]>`select count(*)::int as count from document_chunks where document_id = ${indexed.id}`;
    expect(chunks!.count).toBe(0);
    expect(await t.client.documents.get({ id: indexed.id })).toMatchObject({ status: 'ready', chunkCount: null, indexedAt: null });

    await expectSettledAndBalanced(server.db, t.org);
    expect(await creditsSpent(server, t.org)).toBe(EXTRACT_FAULTS.length + 2);
    expectNoInternalErrors(server.logs);
  });

  it('documents.search answers 503 SERVICE_UNAVAILABLE to every unusable answer and charges nothing', { timeout: 60_000 }, async () => {
    const t = await tenant(server);
    for (const { fault } of EMBED_FAULTS) {
      const refused = await failure(t.client.documents.search({ workspaceId: t.workspaceId, query: `embed:${fault}` }));
      expect(refused, fault).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', message: UNAVAILABLE, defined: true });
      expect(JSON.stringify(refused)).not.toContain(SECRET);
    }
    expect(await creditsSpent(server, t.org)).toBe(0);
    // A usable answer from this (paid, not the local) model costs one credit: the charge is live.
    expect(await t.client.documents.search({ workspaceId: t.workspaceId, query: 'revenue' })).toEqual({ model: 'stand-in', results: [] });
    expect(await creditsSpent(server, t.org)).toBe(1);
    expectNoInternalErrors(server.logs);
  });
});

/**
 * A worker process killed (SIGKILL) in the middle of a job: after its lease one of the other
 * workers (one, or TEST_WORKERS - 1, racing for it) picks the job up again and finishes it,
 * exactly once, with the credits charged once. Needs a real
 * PostgreSQL that separate processes can share (`make test-pg`); skipped on the embedded database.
 *
 * The AI service is a stand-in HTTP server that speaks the OpenAI embeddings protocol and holds
 * the first request open, so the test knows the first worker is mid-job when it kills it.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrlOf, externalDatabaseUrl } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { spawnService, type ServiceProcess } from '../support/processes.ts';
import { clientOf, tenant, waitForJob } from '../jobs/support.ts';
import { workerProcesses } from './support.ts';

describe.skipIf(!externalDatabaseUrl)('a worker killed mid-job', () => {
  let server: TestServer;
  let ai: Server;
  let aiUrl: string;
  const requests: ServerResponse[] = [];
  let firstRequest: Promise<void>;
  const workers: ServiceProcess[] = [];

  beforeAll(async () => {
    let arrived!: () => void;
    firstRequest = new Promise((resolve) => (arrived = resolve));
    ai = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      // A hosted provider has no companion health route (the worker asks it for its model at start).
      if (req.url !== '/v1/embeddings') {
        res.writeHead(404).end();
        return;
      }
      requests.push(res);
      if (requests.length === 1) {
        arrived(); // held open: the worker that sent it is killed
        return;
      }
      const embedding = Array.from({ length: 384 }, (_, i) => (i === 0 ? 1 : 0));
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding }], model: 'stand-in', usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
    ai.listen(0, '127.0.0.1');
    await once(ai, 'listening');
    aiUrl = `http://127.0.0.1:${(ai.address() as AddressInfo).port}`;
    // The API alone (WORKER=off): only the spawned workers run jobs.
    server = await startTestServer({ aiService: false, env: { WORKER: 'off', AI_URL: aiUrl, RATE_LIMIT_PER_MINUTE: '100000' } });
  });
  afterAll(async () => {
    for (const worker of workers) await worker.stop();
    ai?.closeAllConnections();
    ai?.close();
    await server?.close();
  });

  const worker = () => {
    const process = spawnService('worker', { DATABASE_URL: databaseUrlOf(server.db)!, AI_URL: aiUrl, JOB_LEASE_SECONDS: '10', WORKER_CONCURRENCY: '1' });
    workers.push(process);
    return process;
  };

  it('is finished once by another worker after the lease, charged once', async () => {
    // The first worker, then the others once it holds the job (so it is the one to get it).
    const t = await tenant(server);
    const first = worker();
    await first.logged('job worker started');
    const job = await clientOf(server, t.owner).jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['hello'] } });
    await firstRequest;
    expect((await t.client.jobs.get({ id: job.id })).status).toBe('running');
    const others = Array.from({ length: workerProcesses(2) - 1 }, () => worker());
    for (const other of others) await other.logged('job worker started');
    first.child.kill('SIGKILL');
    await first.exited;

    const done = await waitForJob(t, job.id, ['succeeded', 'failed'], 90_000);
    expect(done).toMatchObject({ status: 'succeeded', attempt: 2, credits: 1 });
    expect(requests).toHaveLength(2);
    const [ledger] = await server.db.sql<{ spent: number; rows: number }[]>`select sum(amount)::int as spent, count(*)::int as rows from credit_ledger where organization_id = ${t.org}`;
    expect(ledger).toEqual({ spent: 1, rows: 1 });
    const events = await server.db.sql<{ status: string }[]>`select data->>'status' as status from job_events where job_id = ${job.id} order by id`;
    expect(events.map((event) => event.status)).toEqual(['queued', 'running', 'running', 'succeeded']);
  }, 120_000);
});

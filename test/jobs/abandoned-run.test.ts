/**
 * A run that is abandoned stops its AI calls (issue 40, lows): when the worker's claim on a job is
 * gone (another instance's supervisor took it back after a lost heartbeat, an operator failed it),
 * pg-boss aborts the delivery's signal, and the embedding request in flight is closed instead of
 * keeping the companion's model busy for a result nobody will store. The AI service here is a
 * local server that holds every embedding request and records when its caller hangs up.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_SCHEMA } from '../../src/jobs/queue.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tenant, type Tenant } from './support.ts';

describe('a job run whose claim is taken away', () => {
  let ai: Server;
  const held: { request: IncomingMessage; closed: boolean }[] = [];
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => {
    // Holds every embedding request unanswered; anything else (health) is not found.
    ai = createServer((request, response) => {
      if (request.url !== '/v1/embeddings') {
        response.writeHead(404).end();
        return;
      }
      const entry = { request, closed: false };
      held.push(entry);
      response.on('close', () => (entry.closed = true));
    });
    ai.listen(0, '127.0.0.1');
    await once(ai, 'listening');
    server = await startTestServer({
      aiService: false,
      // The shortest lease: a heartbeat every 5 s sees the claim's loss.
      env: { AI_URL: `http://127.0.0.1:${(ai.address() as AddressInfo).port}`, JOB_LEASE_SECONDS: '10' },
      overrides: { queue: { pollingSeconds: 0.5 } },
    });
    t = await tenant(server);
  });
  afterAll(async () => {
    await server?.close();
    ai?.closeAllConnections();
    ai?.close();
  });

  it('closes its embedding request to the AI service', async () => {
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['abandoned'] } });
    await expect.poll(() => held.length, { timeout: 20_000 }).toBe(1);
    expect(held[0]!.request.headers['x-organization-id']).toBe(t.org);
    // Its turn in the AI service's queues is its payer's: the organization's first owner (no billing here).
    expect(held[0]!.request.headers['x-payer-id']).toBe(`usr:${t.owner.id}`);

    // What a supervisor does to a job whose heartbeat stopped: the row leaves this worker's claim.
    const taken = await server.db.sql`
      update ${server.db.sql(QUEUE_SCHEMA)}.job set state = 'failed', completed_on = now()
      where name = 'jobs' and data ->> 'jobId' = ${job.id} and state = 'active' returning id`;
    expect(taken).toHaveLength(1);

    // Without the delivery's signal the request stayed open until its own 60 s timeout.
    await expect.poll(() => held[0]!.closed, { timeout: 15_000 }).toBe(true);
  });
});

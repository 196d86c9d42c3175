/**
 * Helpers of the jobs suites: an organization with a workspace, documents uploaded through the
 * real flow (createUpload, the signed PUT, complete), and waiting for a job to settle.
 */
import { expect } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import { clientFetch, startTestServer, type TestServer, type TestServerOptions } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

export type Client = ReturnType<typeof createClient>;

export function clientOf(server: TestServer, user: TestUser): Client {
  return createClient({ baseUrl: server.origin, token: user.token, fetch: clientFetch(server) });
}

export interface Tenant {
  owner: TestUser;
  org: string;
  workspaceId: string;
  client: Client;
}

let slugs = 0;

export async function tenant(server: TestServer, role: 'owner' | 'admin' | 'member' = 'owner'): Promise<Tenant> {
  const owner = await createUser(server.db);
  const org = await addMembership(server.db, owner, role);
  const client = clientOf(server, owner);
  const workspace = await client.workspaces.create({ organizationId: org, name: 'Jobs', slug: `jobs-${process.pid}-${++slugs}` });
  return { owner, org, workspaceId: workspace.id, client };
}

/** A test server with `options`, and a tenant on it (the server is closed if the tenant cannot be made). */
export async function startTenantServer(options?: TestServerOptions): Promise<{ server: TestServer; t: Tenant }> {
  const server = await startTestServer(options);
  try {
    return { server, t: await tenant(server) };
  } catch (error) {
    await server.close();
    throw error;
  }
}

type ContentType = Parameters<Client['documents']['createUpload']>[0]['contentType'];

/** Uploads `bytes` and completes the document; answers it, ready. */
export async function uploadDocument(t: Tenant, name: string, contentType: ContentType, bytes: Uint8Array) {
  const { document, upload } = await t.client.documents.createUpload({ organizationId: t.org, workspaceId: t.workspaceId, name, contentType, size: bytes.byteLength });
  const put = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes });
  expect(put.status).toBe(200);
  return t.client.documents.complete({ id: document.id });
}

/**
 * Polls jobs.get until the job reaches one of `statuses` (the stream suites watch events instead).
 * The pause grows from 50 ms to 1 s: a job that runs long on a loaded machine (over 100 chunks
 * through the model) must not poll past the 300 requests a minute one address may send, which a
 * fixed 100-ms pause did once 30 s had passed.
 */
export async function waitForJob(t: Pick<Tenant, 'client'>, id: string, statuses: string[] = ['succeeded', 'failed', 'canceled'], timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 50; ; pause = Math.min(pause * 1.5, 1_000)) {
    const job = await t.client.jobs.get({ id });
    if (statuses.includes(job.status)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${job.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** The organization's credit ledger balance (charges minus refunds). */
export async function creditsSpent(server: TestServer, org: string): Promise<number> {
  const [row] = await server.db.sql<{ spent: number }[]>`select coalesce(sum(amount), 0)::int as spent from credit_ledger where organization_id = ${org}`;
  return row!.spent;
}

export interface HealthPoll {
  answers: number;
  slowestMs: number;
  /** Answers other than 200, and polls unanswered within 3 s. */
  failures: string[];
}

/**
 * Polls /healthz every 100 ms, one request at a time, until `stop()`: a liveness check of the API's
 * event loop while a test's work runs (none may go unanswered for 3 s), not a timing one; the
 * slowest answer is reported for the log.
 */
export function pollHealth(server: TestServer): { stop(): Promise<HealthPoll> } {
  const health: HealthPoll = { answers: 0, slowestMs: 0, failures: [] };
  let polling = true;
  const poll = (async () => {
    while (polling) {
      const started = performance.now();
      try {
        const answer = await server.fetch('/healthz', { signal: AbortSignal.timeout(3_000) });
        await answer.arrayBuffer();
        if (answer.status !== 200) health.failures.push(`status ${answer.status}`);
        health.answers += 1;
      } catch (error) {
        health.failures.push(String(error));
      }
      health.slowestMs = Math.max(health.slowestMs, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    async stop() {
      polling = false;
      await poll;
      return health;
    },
  };
}

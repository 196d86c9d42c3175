/**
 * Concurrent retries with one Idempotency-Key do the work once, proven where it can go wrong:
 * composed API instances (two, or TEST_API_INSTANCES), each with its own pool of connections to one real PostgreSQL server
 * (`make test-pg`, TEST_DATABASE_URL), so the requests really run in parallel. The race is
 * settled by the database (the primary key of idempotency_keys lets one insert win); no memory of
 * one instance is involved. Skipped without TEST_DATABASE_URL: on the embedded database every
 * statement runs on one connection, and retries.test.ts covers the rules.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { createTestDatabase, externalDatabaseUrl } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { apiInstances, instanceClients } from '../concurrency/support.ts';
import { call, newKey, payload, slug, type Answer, type Transport } from './support.ts';

const N = 24;
const env = { RATE_LIMIT_PER_MINUTE: '100000', WORKER: 'off', AI_URL: 'http://127.0.0.1:9', EMAIL_PROVIDER: 'none' };

describe.skipIf(!externalDatabaseUrl)('one Idempotency-Key, N concurrent requests, API instances on one PostgreSQL', () => {
  let db: Database;
  let clients: Database[] = [];
  const servers: TestServer[] = [];
  /** The first instance and the last. */
  let a: TestServer, b: TestServer;
  let owner: TestUser;
  let org: string, workspaceId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    clients = await instanceClients(db, apiInstances(2));
    for (const client of clients) servers.push(await startTestServer({ db: client, aiService: false, env }));
    [a, b] = [servers[0]!, servers.at(-1)!];
    expect(new Set(servers.map((server) => server.db.sql)).size).toBe(servers.length);
    owner = await createUser(a.db);
    org = await addMembership(a.db, owner, 'owner');
    const created = await call(a, 'rest', 'workspaces.create', { organizationId: org, name: 'Races', slug: slug('races') }, { headers: owner.headers });
    expect(created.status).toBe(200);
    workspaceId = created.body.id;
  }, 60_000);
  afterAll(async () => {
    for (const server of servers) await server.close();
    for (const client of clients.slice(1)) await client.close();
    await db?.close();
  });

  /**
   * Request i goes to the instances round-robin, and over REST or RPC alternating in pairs, so
   * every instance sees both transports.
   */
  const route = (i: number): { server: TestServer; transport: Transport } => ({ server: servers[i % servers.length]!, transport: i % 4 < 2 ? 'rest' : 'rpc' });

  /**
   * Fires N requests with one key at once; each answer is the work's 200, a replay of it (200 with
   * Idempotent-Replayed), or 409 CONFLICT "still in progress". Exactly one did the work, and every
   * 200 carries the same resource. Answers the payloads of the 200s.
   */
  async function burst(operation: string, input: Record<string, unknown>, key: string): Promise<any[]> {
    const answers: Answer[] = await Promise.all(Array.from({ length: N }, (_, i) => call(route(i).server, route(i).transport, operation, input, { key, headers: owner.headers })));
    const payloads: any[] = [];
    let worked = 0;
    for (const [i, answer] of answers.entries()) {
      if (answer.status === 409) {
        expect(answer.body.message).toMatch(/still in progress/);
        expect(answer.replayed).toBeNull();
        continue;
      }
      expect(answer.status, answer.text).toBe(200);
      if (answer.replayed === null) worked++;
      else expect(answer.replayed).toBe('true');
      payloads.push(payload(route(i).transport, answer));
    }
    expect(worked).toBe(1);
    for (const item of payloads) expect(item).toEqual(payloads[0]);
    // Once the work is done, every retry on any instance gets its answer.
    for (let i = 0; i < Math.max(4, 2 * servers.length); i++) {
      const retry = await call(route(i).server, route(i).transport, operation, input, { key, headers: owner.headers });
      expect([retry.status, retry.replayed]).toEqual([200, 'true']);
      expect(payload(route(i).transport, retry)).toEqual(payloads[0]);
    }
    return payloads;
  }

  it('documents.createUpload: one pending document', async () => {
    const name = `${slug('burst')}.txt`;
    const [upload] = await burst('documents.createUpload', { organizationId: org, workspaceId, name, contentType: 'text/plain', size: 5 }, newKey());
    const rows = await a.db.sql<{ id: string }[]>`select id from documents where workspace_id = ${workspaceId} and name = ${name}`;
    expect(rows.map((row) => row.id)).toEqual([upload.document.id]);
  });

  it('jobs.create: one job, charged once', async () => {
    const texts = [slug('burst-embed')];
    const [job] = await burst('jobs.create', { organizationId: org, kind: 'text.embed', input: { texts } }, newKey());
    const jobs = await a.db.sql<{ id: string }[]>`select id from jobs where organization_id = ${org} and input = ${a.db.sql.json({ texts })}`;
    expect(jobs.map((row) => row.id)).toEqual([job.id]);
    const [ledger] = await a.db.sql<{ n: number }[]>`select count(*)::int as n from credit_ledger where job_id = ${job.id}`;
    expect(ledger!.n).toBe(1);
  });

  it('workspaces.create: one workspace, and the key answers nothing else', async () => {
    const key = newKey();
    const input = { organizationId: org, name: 'Burst', slug: slug('burst-ws') };
    const [workspace] = await burst('workspaces.create', input, key);
    const rows = await a.db.sql<{ id: string }[]>`select id from workspaces where organization_id = ${org} and slug = ${input.slug}`;
    expect(rows.map((row) => row.id)).toEqual([workspace.id]);
    const other = await call(b, 'rpc', 'workspaces.create', { ...input, slug: slug('burst-ws') }, { key, headers: owner.headers });
    expect(other.status).toBe(409);
    expect(other.body.message).toMatch(/different input/);
  });
});

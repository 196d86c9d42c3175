/**
 * admin.system.status measured for real: the database's round trip and migrations against the
 * shipped sql/ folder, the platform counts, the AI service up (the companion started for the test)
 * and down (AI_URL at a closed port: still 200, ok false with the error), the queue from the jobs
 * table, and the settings (storage, billing's unpriced plans, email, sign-in) without secrets.
 */
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import { LOCAL_EMBEDDING_MODEL } from '../../src/ai-service/client.ts';
import { newId } from '../../src/ids.ts';
import { version } from '../../src/version.ts';
import { closedPort } from '../support/ports.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

const shipped = readdirSync(new URL('../../sql/', import.meta.url))
  .filter((name) => /^\d{4}_.*\.sql$/.test(name))
  .sort();

const status = async (server: TestServer, user: TestUser) => createClient({ baseUrl: server.origin, token: user.token, fetch: clientFetch(server) }).admin.system.status({});

describe('with the AI service up and billing configured', () => {
  let server: TestServer;
  let admin: TestUser;
  beforeAll(async () => {
    server = await startTestServer({
      env: {
        WORKER: 'off',
        WORKER_CONCURRENCY: '3',
        EMAIL_PROVIDER: 'log',
        EMAIL_FROM: 'Ops <ops@example.com>',
        STRIPE_SECRET_KEY: 'sk_test_secret',
        STRIPE_WEBHOOK_SECRET: 'whsec_secret',
        STRIPE_API_URL: 'http://127.0.0.1:9',
        STRIPE_PRICE_PRO_MONTH: 'price_pro_month',
        GITHUB_CLIENT_ID: 'gh-id',
        GITHUB_CLIENT_SECRET: 'gh-secret',
        MAX_UPLOAD_BYTES: '1048576',
      },
    });
    admin = await createUser(server.db, { role: 'admin' });
  });
  afterAll(() => server.close());

  it('reports every field, measured now', async () => {
    const answer = await status(server, admin);
    expect(answer).toMatchObject({ version, environment: 'test', runtime: `node ${process.version}` });
    expect(answer.startedAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect(answer.uptimeSeconds).toBe(Math.floor((Date.now() - answer.startedAt.getTime()) / 1000));

    expect(answer.database).toMatchObject({ ok: true, error: null });
    expect(answer.database.latencyMs).toEqual(expect.any(Number));
    expect(answer.database.migrations).toEqual({ shipped: shipped.length, applied: shipped.length, pending: [], unknown: 0, latestApplied: shipped.at(-1)!.replace(/\.sql$/, '') });
    // No worker runs here (WORKER=off), so none has started the background migrations yet.
    expect(answer.database.backgroundMigrations).toEqual([]);

    expect(answer.ai).toMatchObject({ ok: true, error: null, url: server.services.config.ai.url, problems: [], provider: 'local', model: LOCAL_EMBEDDING_MODEL, staleDocuments: 0 });
    expect(answer.ai.latencyMs).toEqual(expect.any(Number));

    expect(answer.queue).toMatchObject({ configured: true, worker: 'off', concurrency: 3 });
    expect(answer.storage).toEqual({ driver: 'local', location: server.services.storage.location, maxUploadBytes: 1048576 });
    // pro has a monthly price; team has none.
    expect(answer.billing).toEqual({ enabled: true, unpricedPlans: ['team'] });
    expect(answer.email).toEqual({ provider: 'log', from: 'Ops <ops@example.com>' });
    expect(answer.auth).toEqual({ socialProviders: ['github'], requireEmailVerification: server.services.config.requireEmailVerification });
    // No secret of the settings anywhere in it.
    const text = JSON.stringify(answer);
    for (const secret of ['sk_test_secret', 'whsec_secret', 'gh-secret', 'test-secret-test-secret']) expect(text).not.toContain(secret);
  });

  it('counts the platform and the queue from the database', async () => {
    const before = await status(server, admin);
    const owner = await createUser(server.db);
    const org = await addMembership(server.db, owner, 'owner');
    await server.db.sql`insert into workspaces (id, organization_id, name, slug) values (${newId('ws')}, ${org}, 'Counted', 'counted')`;
    await server.db.sql`insert into subscriptions (id, organization_id, plan, status) values (${newId('sub')}, ${org}, 'pro', 'active')`;
    const job = (status: string, createdAt: Date) => server.db.sql`
      insert into jobs (id, organization_id, kind, status, input, credits, created_at)
      values (${newId('job')}, ${org}, 'text.embed', ${status}, ${server.db.sql.json({ texts: ['x'] })}, 1, ${createdAt})`;
    const oldest = new Date(Date.now() - 60_000);
    await job('queued', oldest);
    await job('queued', new Date());
    await job('running', new Date());
    await job('failed', new Date());

    const after = await status(server, admin);
    expect(after.counts.users - before.counts.users).toBe(1);
    expect(after.counts.organizations - before.counts.organizations).toBe(1);
    expect(after.counts.workspaces - before.counts.workspaces).toBe(1);
    expect(after.counts.subscriptions - before.counts.subscriptions).toBe(1);
    expect(after.queue.depth! - before.queue.depth!).toBe(2);
    expect(after.queue.running! - before.queue.running!).toBe(1);
    expect(after.queue.failed! - before.queue.failed!).toBe(1);
    expect(after.queue.oldestQueuedAt!.getTime()).toBeLessThanOrEqual(oldest.getTime());
  });

  it('refuses a signed-in non-admin (403)', async () => {
    const user = await createUser(server.db);
    await addMembership(server.db, user, 'owner');
    expect((await server.fetch('/api/v1/admin/system', { headers: user.headers })).status).toBe(403);
  });
});

describe('with the AI service down and billing off', () => {
  let server: TestServer;
  let admin: TestUser;
  let url: string;
  beforeAll(async () => {
    url = `http://127.0.0.1:${await closedPort()}`;
    server = await startTestServer({ aiService: false, env: { AI_URL: url, WORKER: 'inline', WORKER_CONCURRENCY: '2' } });
    admin = await createUser(server.db, { role: 'admin' });
  });
  afterAll(() => server.close());

  it('still answers 200: ai.ok false with the error, every paid plan unpriced', async () => {
    const answer = await status(server, admin);
    expect(answer.ai).toMatchObject({ ok: false, latencyMs: null, url, problems: [], provider: null, model: null, ocr: null, staleDocuments: null });
    expect(answer.ai.error).toEqual(expect.any(String));
    expect(answer.database.ok).toBe(true);
    expect(answer.queue).toMatchObject({ worker: 'inline', concurrency: 2, oldestQueuedAt: null });
    expect(answer.billing).toEqual({ enabled: false, unpricedPlans: ['pro', 'team'] });
  });
});

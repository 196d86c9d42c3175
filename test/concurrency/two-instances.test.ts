/**
 * API instances (composed servers: two, or TEST_API_INSTANCES) on one database behave as one:
 * what one writes the others see, sessions work on all, and a quota holds across all under a
 * burst spread round-robin over them. With TEST_DATABASE_URL (`make test-pg`) each instance has
 * its own pool on the real server, as separate processes would; that is the case this file is
 * for. On the embedded database the server takes a single client, so the instances share it: the
 * checks then show only that no state that matters lives in one instance's memory.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { createTestDatabase, externalDatabaseUrl } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { apiInstances, BURST_ENV, burst, clientFor, expectOnly, instanceClients, settablePlans, succeeded } from './support.ts';

const { plans, limits } = settablePlans();
const env = { ...BURST_ENV, EMAIL_PROVIDER: 'none' };
let db: Database;
let clients: Database[] = [];
const servers: TestServer[] = [];
/** The first instance and the last: the roles the checks give a writer and a reader. */
let a: TestServer, b: TestServer;
/** Every instance but `a`. */
const others = () => servers.slice(1);

beforeAll(async () => {
  db = await createTestDatabase();
  clients = await instanceClients(db, apiInstances(2));
  for (const client of clients) servers.push(await startTestServer({ db: client, env, overrides: { plans } }));
  [a, b] = [servers[0]!, servers.at(-1)!];
  if (externalDatabaseUrl) expect(new Set(servers.map((server) => server.db.sql)).size).toBe(servers.length);
});
afterAll(async () => {
  for (const server of servers) await server.close();
  for (const client of clients.slice(1)) await client.close();
  await db?.close();
});

const json = (body: unknown, token?: string): RequestInit => ({
  method: 'POST',
  headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
});

async function signUp(server: TestServer, email: string): Promise<{ token: string; userId: string }> {
  const response = await server.fetch('/api/auth/sign-up/email', json({ name: 'Two Instances', email, password: 'correct horse battery staple' }));
  expect(response.status).toBe(200);
  const body = await response.json();
  return { token: body.token, userId: body.user.id };
}

const me = (server: TestServer, token: string) => server.fetch('/api/v1/me', { headers: { authorization: `Bearer ${token}` } });

describe('API instances on one database', () => {
  it('accept a session made on any, and end it on all', async () => {
    const email = `two-${Date.now()}@example.com`;
    const { token, userId } = await signUp(a, email);
    for (const server of others()) {
      const onOther = await me(server, token);
      expect(onOther.status).toBe(200);
      expect(await onOther.json()).toMatchObject({ id: userId, email });
    }

    const signIn = await b.fetch('/api/auth/sign-in/email', json({ email, password: 'correct horse battery staple' }));
    expect(signIn.status).toBe(200);
    const second = (await signIn.json()).token as string;
    for (const server of servers) expect((await me(server, second)).status).toBe(200);

    // Signed out on A: every other instance refuses the token at once (no session lives in an instance's memory).
    expect((await a.fetch('/api/auth/sign-out', json(undefined, token))).status).toBe(200);
    for (const server of others()) {
      expect((await me(server, token)).status).toBe(401);
      expect((await me(server, second)).status).toBe(200);
    }
  });

  it("show each other's writes: an organization made on B, a workspace made on A", async () => {
    const user = await signUp(a, `orgs-${Date.now()}@example.com`);
    const created = await b.fetch('/api/auth/organization/create', json({ name: 'Shared', slug: `shared-${Date.now()}` }, user.token));
    expect(created.status).toBe(200);
    const org = (await created.json()).id as string;
    const workspace = await clientFor(a, user).workspaces.create({ organizationId: org, name: 'Made on A', slug: 'made-on-a' });
    for (const server of others()) {
      expect(await clientFor(server, user).workspaces.get({ organizationId: org, slug: 'made-on-a' })).toMatchObject({ id: workspace.id, name: 'Made on A' });
      expect((await clientFor(server, user).workspaces.list({ organizationId: org })).map((item) => item.id)).toEqual([workspace.id]);
    }
    await clientFor(b, user).workspaces.update({ id: workspace.id, name: 'Renamed on B' });
    for (const server of servers.slice(0, -1)) expect(await clientFor(server, user).workspaces.get({ organizationId: org, slug: 'made-on-a' })).toMatchObject({ name: 'Renamed on B' });
  });

  it('hold the workspace limit exactly when a burst of creations is spread across all', async () => {
    const user = await signUp(b, `burst-${Date.now()}@example.com`);
    const created = await a.fetch('/api/auth/organization/create', json({ name: 'Limited', slug: `limited-${Date.now()}` }, user.token));
    const org = (await created.json()).id as string;
    limits.set(org, { workspaces: 7 });
    await clientFor(b, user).workspaces.create({ organizationId: org, name: 'First', slug: 'first' });

    const calls = Array.from({ length: 40 }, (_, i) => () => clientFor(servers[i % servers.length]!, user).workspaces.create({ organizationId: org, name: `Burst ${i}`, slug: `burst-${i}` }));
    const outcomes = await burst(calls);
    expectOnly(outcomes, ['LIMIT_REACHED']);
    expect(succeeded(outcomes)).toHaveLength(6);
    const [onA, ...onOthers] = await Promise.all(servers.map((server) => clientFor(server, user).workspaces.list({ organizationId: org })));
    expect(onA).toHaveLength(7);
    for (const onOther of onOthers) expect(onOther.map((item) => item.id).sort()).toEqual(onA!.map((item) => item.id).sort());
  });
});

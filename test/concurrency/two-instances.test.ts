/**
 * Two API instances (two composed servers) on one database behave as one: what one writes the
 * other sees, sessions work on both, and a quota holds across both under a burst split between
 * them. With TEST_DATABASE_URL (`make test-pg`) each instance has its own pool on the real server,
 * as two processes would; that is the case this file is for. On the embedded database the server
 * takes a single client, so both instances share it: the checks then show only that no state
 * that matters lives in one instance's memory.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { createTestDatabase, externalDatabaseUrl, openSecondClient } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { BURST_ENV, burst, clientFor, expectOnly, settablePlans, succeeded } from './support.ts';

const { plans, limits } = settablePlans();
const env = { ...BURST_ENV, EMAIL_PROVIDER: 'none' };
let db: Database, secondDb: Database;
let a: TestServer, b: TestServer;

beforeAll(async () => {
  db = await createTestDatabase();
  secondDb = await openSecondClient(db);
  a = await startTestServer({ db, env, overrides: { plans } });
  b = await startTestServer({ db: secondDb, env, overrides: { plans } });
  if (externalDatabaseUrl) expect(a.db.sql).not.toBe(b.db.sql);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await secondDb?.close();
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

describe('two API instances on one database', () => {
  it('accept a session made on either, and end it on both', async () => {
    const email = `two-${Date.now()}@example.com`;
    const { token, userId } = await signUp(a, email);
    const onB = await me(b, token);
    expect(onB.status).toBe(200);
    expect(await onB.json()).toMatchObject({ id: userId, email });

    const signIn = await b.fetch('/api/auth/sign-in/email', json({ email, password: 'correct horse battery staple' }));
    expect(signIn.status).toBe(200);
    const second = (await signIn.json()).token as string;
    expect((await me(a, second)).status).toBe(200);

    // Signed out on A: B refuses the token at once (no session lives in an instance's memory).
    expect((await a.fetch('/api/auth/sign-out', json(undefined, token))).status).toBe(200);
    expect((await me(b, token)).status).toBe(401);
    expect((await me(b, second)).status).toBe(200);
  });

  it('show each other\'s writes: an organization made on B, a workspace made on A', async () => {
    const user = await signUp(a, `orgs-${Date.now()}@example.com`);
    const created = await b.fetch('/api/auth/organization/create', json({ name: 'Shared', slug: `shared-${Date.now()}` }, user.token));
    expect(created.status).toBe(200);
    const org = (await created.json()).id as string;
    const workspace = await clientFor(a, user).workspaces.create({ organizationId: org, name: 'Made on A', slug: 'made-on-a' });
    expect(await clientFor(b, user).workspaces.get({ organizationId: org, slug: 'made-on-a' })).toMatchObject({ id: workspace.id, name: 'Made on A' });
    expect((await clientFor(b, user).workspaces.list({ organizationId: org })).map((item) => item.id)).toEqual([workspace.id]);
    await clientFor(b, user).workspaces.update({ id: workspace.id, name: 'Renamed on B' });
    expect(await clientFor(a, user).workspaces.get({ organizationId: org, slug: 'made-on-a' })).toMatchObject({ name: 'Renamed on B' });
  });

  it('hold the workspace limit exactly when a burst of creations is split across both', async () => {
    const user = await signUp(b, `burst-${Date.now()}@example.com`);
    const created = await a.fetch('/api/auth/organization/create', json({ name: 'Limited', slug: `limited-${Date.now()}` }, user.token));
    const org = (await created.json()).id as string;
    limits.set(org, { workspaces: 7 });
    await clientFor(b, user).workspaces.create({ organizationId: org, name: 'First', slug: 'first' });

    const calls = Array.from({ length: 40 }, (_, i) => () => clientFor(i % 2 ? a : b, user).workspaces.create({ organizationId: org, name: `Burst ${i}`, slug: `burst-${i}` }));
    const outcomes = await burst(calls);
    expectOnly(outcomes, ['LIMIT_REACHED']);
    expect(succeeded(outcomes)).toHaveLength(6);
    const [onA, onB] = await Promise.all([clientFor(a, user).workspaces.list({ organizationId: org }), clientFor(b, user).workspaces.list({ organizationId: org })]);
    expect(onA).toHaveLength(7);
    expect(onB.map((item) => item.id).sort()).toEqual(onA.map((item) => item.id).sort());
  });
});

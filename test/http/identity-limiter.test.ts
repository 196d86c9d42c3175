/**
 * The identity limiter runs before the session lookup, and sign-in attempts are limited per
 * (email, address) and per address, never per email alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionAuthenticator } from '../../src/auth/authenticate.ts';
import type { Database } from '../../src/db/connection.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createUser, TEST_PASSWORD, type TestUser } from '../support/users.ts';

let db: Database;
let now = new Date('2030-07-01T00:00:00.000Z');
const servers: TestServer[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await db?.close();
});

async function start(env: Record<string, string>, countLookups?: () => void): Promise<TestServer> {
  const authenticate = sessionAuthenticator(db.sql, () => now);
  const server = await startTestServer({
    db,
    env,
    overrides: {
      now: () => now,
      ...(countLookups ? { authenticate: async (headers) => (countLookups(), authenticate(headers)) } : {}),
    },
  });
  servers.push(server);
  return server;
}

const signIn = (server: TestServer, email: string, password: string, from?: string) =>
  server.fetch('/api/auth/sign-in/email', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(from ? { 'x-forwarded-for': from } : {}) },
    body: JSON.stringify({ email, password }),
  });

describe('the identity limiter', () => {
  it('refuses past its budget before any session lookup, with Retry-After', async () => {
    let lookups = 0;
    // AUTH_RATE_LIMIT_PER_MINUTE=1: every identity route together gets 10 a minute per address.
    const server = await start({ AUTH_RATE_LIMIT_PER_MINUTE: '1' }, () => {
      lookups += 1;
    });
    const headers = { authorization: 'Bearer made-up.token' };
    for (let i = 0; i < 10; i += 1) expect((await server.fetch('/api/auth/get-session', { headers })).status).toBe(200);
    expect(lookups).toBe(10);
    for (let i = 0; i < 5; i += 1) {
      const limited = await server.fetch('/api/auth/get-session', { headers });
      expect(limited.status).toBe(429);
      expect(await limited.json()).toMatchObject({ defined: true, code: 'TOO_MANY_REQUESTS', status: 429 });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect(lookups).toBe(10);
  });

  it('gives the sensitive routes the tight budget, also before the body is read', async () => {
    const server = await start({ AUTH_RATE_LIMIT_PER_MINUTE: '2' });
    const body = JSON.stringify({ email: 'nobody@example.com', password: 'whatever' });
    const request = { method: 'POST', headers: { 'content-type': 'application/json' }, body };
    expect((await server.fetch('/api/auth/sign-in/email', request)).status).toBe(401);
    expect((await server.fetch('/api/auth/request-password-reset', { ...request, body: '{"email":"nobody@example.com"}' })).status).toBe(200);
    const limited = await server.fetch('/api/auth/sign-in/email', request);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    // A body that is not even JSON is refused by the limiter first.
    expect((await server.fetch('/api/auth/sign-up/email', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' })).status).toBe(429);
    // Other identity routes still have their own budget.
    expect((await server.fetch('/api/auth/get-session')).status).toBe(200);
  });
});

describe('sign-in attempts', () => {
  let server: TestServer;
  let victim: TestUser;
  beforeAll(async () => {
    server = await start({ TRUST_PROXY: 'true', AUTH_RATE_LIMIT_PER_MINUTE: '1000' });
    victim = await createUser(db);
  });

  it('guessing from elsewhere never locks the owner out: the limit is per (email, address)', async () => {
    const attacker = '203.0.113.66';
    for (let i = 0; i < 5; i += 1) expect((await signIn(server, victim.email, 'wrong guess', attacker)).status).toBe(401);
    const limited = await signIn(server, victim.email.toUpperCase(), 'wrong guess', attacker);
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ code: 'TOO_MANY_REQUESTS', message: expect.stringMatching(/this email address/) });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(800);
    // Even the right password waits, from the attacker's address (and its whole IPv6 /64 would too).
    expect((await signIn(server, victim.email, TEST_PASSWORD, attacker)).status).toBe(429);
    // The owner, from their own address, signs in.
    expect((await signIn(server, victim.email, TEST_PASSWORD, '198.51.100.7')).status).toBe(200);
  });

  it('an IPv6 attacker cannot get fresh budgets by changing the low 64 bits', async () => {
    const other = await createUser(db);
    for (let i = 0; i < 5; i += 1) expect((await signIn(server, other.email, 'wrong guess', `2001:db8:66:1::${i + 1}`)).status).toBe(401);
    expect((await signIn(server, other.email, 'wrong guess', '2001:db8:66:1:abcd::9')).status).toBe(429);
    expect((await signIn(server, other.email, TEST_PASSWORD, '2001:db8:77:1::1')).status).toBe(200);
  });

  it('one address trying many accounts is limited per address', async () => {
    // AUTH_RATE_LIMIT_PER_MINUTE=2: the sensitive routes get 2 a minute, sign-in 10 per 15 minutes per address.
    const tight = await start({ TRUST_PROXY: 'true', AUTH_RATE_LIMIT_PER_MINUTE: '2' });
    const from = '203.0.113.99';
    for (let i = 0; i < 10; i += 1) {
      if (i % 2 === 0) now = new Date(now.getTime() + 61_000); // past the per-minute identity limit
      expect((await signIn(tight, `target-${i}@example.com`, 'guess', from)).status).toBe(401);
    }
    now = new Date(now.getTime() + 61_000);
    const limited = await signIn(tight, 'target-10@example.com', 'guess', from);
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ message: expect.stringMatching(/from this address/) });
    expect((await signIn(tight, victim.email, TEST_PASSWORD, '198.51.100.8')).status).toBe(200);
  });
});

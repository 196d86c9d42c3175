import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { normalizeAddress } from '../../src/http/client-ip.ts';
import { addressKey, createRateLimiter, signInKey, type RateLimit, type RateLimiter } from '../../src/auth/rate-limit.ts';
import { sharedLimiters } from '../../src/auth/shared-rate-limit.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createTestDatabase } from '../support/database.ts';
import type { Database, Sql } from '../../src/db/connection.ts';

describe('addressKey and normalizeAddress', () => {
  const cases = [
    { address: '203.0.113.7', normal: '203.0.113.7', key: '203.0.113.7' },
    { address: '::ffff:10.0.0.9', normal: '10.0.0.9', key: '10.0.0.9' },
    { address: '::FFFF:10.0.0.9', normal: '10.0.0.9', key: '10.0.0.9' },
    { address: '2001:db8:1:2::1', normal: '2001:db8:1:2::1', key: '2001:db8:1:2::/64' },
    { address: '2001:DB8:1:2:aaaa:bbbb:cccc:dddd', normal: '2001:db8:1:2:aaaa:bbbb:cccc:dddd', key: '2001:db8:1:2::/64' },
    { address: '2001:db8::1', normal: '2001:db8::1', key: '2001:db8:0:0::/64' },
    { address: 'fe80::1%eth0', normal: 'fe80::1', key: 'fe80:0:0:0::/64' },
    { address: '64:ff9b::203.0.113.7', normal: '64:ff9b::203.0.113.7', key: '64:ff9b:0:0::/64' },
    { address: '::1', normal: '::1', key: '0:0:0:0::/64' },
    { address: 'unknown', normal: 'unknown', key: 'unknown' },
  ];
  for (const { address, normal, key } of cases) {
    it(`${address} -> ${normal}, limited as ${key}`, () => {
      expect(normalizeAddress(address)).toBe(normal);
      expect(addressKey(address)).toBe(key);
      expect(addressKey(key)).toBe(key); // applying it twice is harmless
    });
  }

  it('sign-in keys hold the email (any case) and the address key', () => {
    expect(signInKey('Ada@Example.com', '2001:db8:1:2::1')).toBe(signInKey('ada@example.com', '2001:db8:1:2::99'));
    expect(signInKey('ada@example.com', '203.0.113.1')).not.toBe(signInKey('ada@example.com', '203.0.113.2'));
  });
});

// One database for the file: the limiters below count under names of their own, and the servers
// share it (none of them makes an AI call). On a database server (scripts/test-pg.sh) the servers'
// per-IP counts live in its rate_limits table: each test of the per-IP limiter starts from none.
let db: Database;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.close());

describe('the limiters, in memory and in PostgreSQL', () => {
  const warnings: unknown[] = [];
  const logger = { warn: (obj: object) => void warnings.push(obj) };
  // Each case a fresh limiter name, so cases never share counts in the table.
  let names = 0;
  const kinds: { kind: string; make: (limit: RateLimit, now: () => number) => RateLimiter }[] = [
    { kind: 'in memory', make: (limit, now) => createRateLimiter({ ...limit, now }) },
    { kind: 'in PostgreSQL', make: (limit, now) => sharedLimiters({ sql: db.sql, now, logger })(`test-${++names}`, limit) },
  ];

  for (const { kind, make } of kinds) {
    it(`${kind}: allows the limit per window, then answers when to retry, then resets`, async () => {
      let now = 1_000_000;
      const limiter = make({ limit: 2, windowMs: 60_000 }, () => now);
      expect(await limiter.hit('a')).toEqual({ allowed: true });
      expect(await limiter.hit('a')).toEqual({ allowed: true });
      expect(await limiter.hit('b')).toEqual({ allowed: true });
      now += 15_000;
      expect(await limiter.hit('a')).toEqual({ allowed: false, retryAfterSeconds: 45 });
      expect(await limiter.hit('a')).toEqual({ allowed: false, retryAfterSeconds: 45 });
      now += 45_000;
      expect(await limiter.hit('a')).toEqual({ allowed: true });
      // The new window started at that hit.
      now += 59_000;
      expect(await limiter.hit('a')).toEqual({ allowed: true });
      expect(await limiter.hit('a')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    });

    it(`${kind}: counts every hit of a burst once`, async () => {
      const limiter = make({ limit: 20, windowMs: 60_000 }, () => 5_000_000);
      const decisions = await Promise.all(Array.from({ length: 50 }, () => limiter.hit('burst')));
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(20);
    });
  }

  it('in PostgreSQL: limiters of different names count apart, and instances of one name together', async () => {
    const now = () => 9_000_000;
    const one = sharedLimiters({ sql: db.sql, now, logger });
    const other = sharedLimiters({ sql: db.sql, now, logger });
    expect(await one('shared', { limit: 1, windowMs: 60_000 }).hit('k')).toEqual({ allowed: true });
    expect(await one('apart', { limit: 1, windowMs: 60_000 }).hit('k')).toEqual({ allowed: true });
    expect(await other('shared', { limit: 1, windowMs: 60_000 }).hit('k')).toMatchObject({ allowed: false });
  });

  it('in PostgreSQL: a hit the database cannot count is counted in the process, and logged (never let through uncounted)', async () => {
    const broken = (() => Promise.reject(new Error('database unavailable'))) as unknown as Sql;
    warnings.length = 0;
    const limiter = sharedLimiters({ sql: broken, now: () => 1, logger })('broken', { limit: 1, windowMs: 60_000 });
    expect(await limiter.hit('k')).toEqual({ allowed: true });
    expect(await limiter.hit('k')).toEqual({ allowed: false, retryAfterSeconds: 60 });
    expect(await limiter.hit('other')).toEqual({ allowed: true });
    expect(warnings).toHaveLength(3);
  });

  it('in PostgreSQL: the process counts the hits the database counted too, so a failure mid-window refuses on time', async () => {
    let up = true;
    // Answers as the table would for the first hits of a window while `up`, then fails.
    let count = 0;
    const flaky = (() => (up ? Promise.resolve([{ count: ++count, resets_at: new Date(60_001) }]) : Promise.reject(new Error('pool exhausted')))) as unknown as Sql;
    const limiter = sharedLimiters({ sql: flaky, now: () => 1, logger })('flaky', { limit: 2, windowMs: 60_000 });
    expect(await limiter.hit('k')).toEqual({ allowed: true });
    expect(await limiter.hit('k')).toEqual({ allowed: true });
    up = false;
    expect(await limiter.hit('k')).toEqual({ allowed: false, retryAfterSeconds: 60 });
  });
});

describe('the shared per-IP limiter', () => {
  let servers: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
    await db.sql`delete from rate_limits where limiter = 'ip'`;
  });

  it('answers 429 on /api/v1 and /rpc past the limit, sharing one budget', async () => {
    const server = await startTestServer({ db, aiService: false, env: { RATE_LIMIT_PER_MINUTE: '3' } });
    servers.push(server);
    expect((await server.fetch('/api/v1/health')).status).toBe(200);
    expect((await server.fetch('/rpc/system/health', { method: 'POST' })).status).toBe(200);
    expect((await server.fetch('/api/v1/health')).status).toBe(200);
    const limited = await server.fetch('/rpc/system/health', { method: 'POST' });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ code: 'TOO_MANY_REQUESTS', status: 429 });
    // Probes are not limited.
    expect((await server.fetch('/healthz')).status).toBe(200);
  });

  it('behind a proxy that appends to X-Forwarded-For, each client has its own budget, whatever it wrote itself', async () => {
    const server = await startTestServer({ db, aiService: false, env: { RATE_LIMIT_PER_MINUTE: '1', TRUST_PROXY: 'true' } });
    servers.push(server);
    const from = (forwarded: string) => ({ headers: { 'x-forwarded-for': forwarded } });
    expect((await server.fetch('/api/v1/health', from('203.0.113.1'))).status).toBe(200);
    expect((await server.fetch('/api/v1/health', from('203.0.113.2'))).status).toBe(200);
    // The client wrote the left part; the proxy appended what it saw.
    expect((await server.fetch('/api/v1/health', from('198.51.100.9, 203.0.113.3'))).status).toBe(200);
    expect((await server.fetch('/api/v1/health', from('198.51.100.10, 203.0.113.3'))).status).toBe(429);
    expect((await server.fetch('/api/v1/health', from('203.0.113.3'))).status).toBe(429);
    expect((await server.fetch('/api/v1/health', from('203.0.113.1'))).status).toBe(429);
  });

  it('counts an IPv6 client by its /64 and an IPv4-mapped address as the IPv4 one', async () => {
    const server = await startTestServer({ db, aiService: false, env: { RATE_LIMIT_PER_MINUTE: '1', TRUST_PROXY: '1' } });
    servers.push(server);
    const from = (forwarded: string) => ({ headers: { 'x-forwarded-for': forwarded } });
    expect((await server.fetch('/api/v1/health', from('2001:db8:1:2::1'))).status).toBe(200);
    expect((await server.fetch('/api/v1/health', from('2001:db8:1:2:ffff::77'))).status).toBe(429);
    expect((await server.fetch('/api/v1/health', from('2001:db8:1:3::1'))).status).toBe(200);
    expect((await server.fetch('/api/v1/health', from('203.0.113.50'))).status).toBe(200);
    expect((await server.fetch('/api/v1/health', from('::ffff:203.0.113.50'))).status).toBe(429);
  });

  it('ignores X-Forwarded-For without TRUST_PROXY', async () => {
    const server = await startTestServer({ db, aiService: false, env: { RATE_LIMIT_PER_MINUTE: '1' } });
    servers.push(server);
    expect((await server.fetch('/api/v1/health', { headers: { 'x-forwarded-for': '203.0.113.1' } })).status).toBe(200);
    expect((await server.fetch('/api/v1/health', { headers: { 'x-forwarded-for': '203.0.113.2' } })).status).toBe(429);
  });
});

describe('the client address under each TRUST_PROXY', () => {
  const servers: Record<string, TestServer> = {};
  const settings = { none: undefined, true: 'true', two: '2', loopback: 'loopback', chain: '127.0.0.1, 10.0.0.0/8' } as const;
  beforeAll(async () => {
    for (const [name, value] of Object.entries(settings)) {
      servers[name] = await startTestServer({ db, aiService: false, env: value === undefined ? {} : { TRUST_PROXY: value } });
    }
  });
  afterAll(async () => {
    await Promise.all(Object.values(servers).map((s) => s.close()));
  });

  /** The address on the access-log line of one request carrying this X-Forwarded-For. */
  async function clientOf(server: TestServer, forwarded: string | undefined): Promise<string> {
    const id = `ip-${Math.random().toString(36).slice(2)}`;
    await server.fetch('/healthz', { headers: { 'x-request-id': id, ...(forwarded === undefined ? {} : { 'x-forwarded-for': forwarded }) } });
    await new Promise((resolve) => setTimeout(resolve, 10));
    return server.logs.find((line) => line.requestId === id && line.msg === 'request')!.ip;
  }

  const cases: { setting: keyof typeof settings; forwarded: string | undefined; want: string }[] = [
    { setting: 'none', forwarded: '203.0.113.7', want: '127.0.0.1' },
    { setting: 'true', forwarded: undefined, want: '127.0.0.1' },
    { setting: 'true', forwarded: '203.0.113.7', want: '203.0.113.7' },
    { setting: 'true', forwarded: 'spoofed, 198.51.100.1, 203.0.113.7', want: '203.0.113.7' },
    { setting: 'true', forwarded: ' 2001:DB8::1 ', want: '2001:db8::1' },
    { setting: 'two', forwarded: '198.51.100.1, 203.0.113.7, 10.0.0.2', want: '203.0.113.7' },
    { setting: 'loopback', forwarded: '203.0.113.7, 10.0.0.2', want: '10.0.0.2' },
    { setting: 'chain', forwarded: '198.51.100.1, 203.0.113.7, 10.0.0.2', want: '203.0.113.7' },
    { setting: 'chain', forwarded: '10.1.1.1, 10.0.0.2', want: '10.1.1.1' },
  ];
  for (const { setting, forwarded, want } of cases) {
    it(`TRUST_PROXY=${settings[setting] ?? '(unset)'}, X-Forwarded-For ${JSON.stringify(forwarded)} -> ${want}`, async () => {
      expect(await clientOf(servers[setting]!, forwarded)).toBe(want);
    });
  }
});

import { afterEach, describe, expect, it } from 'vitest';
import { resolveClientIp } from '../../src/http/client-ip.ts';
import { createRateLimiter } from '../../src/auth/rate-limit.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createTestDatabase } from '../support/database.ts';

describe('resolveClientIp', () => {
  const cases = [
    { given: { socket: '::ffff:10.0.0.9', forwarded: '203.0.113.7', trust: false }, want: '10.0.0.9' },
    { given: { socket: '10.0.0.9', forwarded: '203.0.113.7', trust: true }, want: '203.0.113.7' },
    { given: { socket: '10.0.0.9', forwarded: ' 2001:db8::1 ', trust: true }, want: '2001:db8::1' },
    { given: { socket: '10.0.0.9', forwarded: '198.51.100.1, 203.0.113.7', trust: true }, want: '10.0.0.9' },
    { given: { socket: '10.0.0.9', forwarded: 'not-an-ip', trust: true }, want: '10.0.0.9' },
    { given: { socket: '10.0.0.9', forwarded: undefined, trust: true }, want: '10.0.0.9' },
  ];
  for (const { given, want } of cases) {
    it(`${JSON.stringify(given)} -> ${want}`, () => {
      expect(resolveClientIp(given.socket, given.forwarded, given.trust)).toBe(want);
    });
  }
});

describe('createRateLimiter', () => {
  it('allows the limit per window, then answers when to retry, then resets', () => {
    let now = 1_000_000;
    const limiter = createRateLimiter({ limit: 2, windowMs: 60_000, now: () => now });
    expect(limiter.hit('a')).toEqual({ allowed: true });
    expect(limiter.hit('a')).toEqual({ allowed: true });
    expect(limiter.hit('b')).toEqual({ allowed: true });
    now += 15_000;
    expect(limiter.hit('a')).toEqual({ allowed: false, retryAfterSeconds: 45 });
    now += 45_000;
    expect(limiter.hit('a')).toEqual({ allowed: true });
  });
});

describe('the shared per-IP limiter', () => {
  let servers: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
  });

  it('answers 429 on /api/v1 and /rpc past the limit, sharing one budget', async () => {
    const server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '3' } });
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

  it('counts x-forwarded-for clients apart only behind a trusted proxy', async () => {
    const db = await createTestDatabase();
    const trusted = await startTestServer({ db, env: { RATE_LIMIT_PER_MINUTE: '1', TRUST_PROXY: 'true' } });
    const untrusted = await startTestServer({ db, env: { RATE_LIMIT_PER_MINUTE: '1' } });
    servers.push(trusted, untrusted);
    const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });

    expect((await trusted.fetch('/api/v1/health', from('203.0.113.1'))).status).toBe(200);
    expect((await trusted.fetch('/api/v1/health', from('203.0.113.2'))).status).toBe(200);
    expect((await trusted.fetch('/api/v1/health', from('203.0.113.1'))).status).toBe(429);
    // A list is not a single address: the socket address counts, and it has a budget of its own.
    expect((await trusted.fetch('/api/v1/health', from('203.0.113.3, 203.0.113.4'))).status).toBe(200);
    expect((await trusted.fetch('/api/v1/health', from('203.0.113.5, 203.0.113.6'))).status).toBe(429);

    expect((await untrusted.fetch('/api/v1/health', from('203.0.113.1'))).status).toBe(200);
    expect((await untrusted.fetch('/api/v1/health', from('203.0.113.2'))).status).toBe(429);
    await db.close();
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { post, signIn, signUp, uniqueEmail } from './clients.ts';

// AUTH_RATE_LIMIT_PER_MINUTE=2: sign-up, sign-in, reset and verification mail share 2 requests a
// minute per IP; every identity route together gets 10 times that.
let now = new Date('2030-07-01T00:00:00.000Z');
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '2', EMAIL_PROVIDER: 'log' }, overrides: { now: () => now } });
});
afterAll(() => server?.close());

async function expectLimited(response: Response) {
  expect(response.status).toBe(429);
  expect(await response.json()).toMatchObject({ defined: true, code: 'TOO_MANY_REQUESTS', status: 429 });
  const retryAfter = Number(response.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

describe('the identity limiter', () => {
  it('gives sign-up, sign-in, reset and verification mail a shared, tight per-IP budget', async () => {
    const { email } = await signUp(server);
    expect((await signIn(server, email)).response.status).toBe(200);
    const sensitive = [
      ['/api/auth/sign-up/email', { name: 'A', email: uniqueEmail(), password: 'long enough' }],
      ['/api/auth/sign-in/email', { email, password: 'whatever' }],
      ['/api/auth/request-password-reset', { email }],
      ['/api/auth/send-verification-email', { email }],
      ['/api/auth/reset-password', { token: 'x', newPassword: 'long enough' }],
    ] as const;
    for (const [path, body] of sensitive) await expectLimited(await server.fetch(path, post(body)));
    // Other identity routes have their own, larger budget.
    expect((await server.fetch('/api/auth/get-session')).status).toBe(200);
  });

  it('limits every identity route at ten times that, and forgets after a minute', async () => {
    now = new Date(now.getTime() + 60_000);
    for (let i = 0; i < 20; i += 1) expect((await server.fetch('/api/auth/get-session')).status).toBe(200);
    await expectLimited(await server.fetch('/api/auth/get-session'));
    await expectLimited(await server.fetch('/api/auth/verify-email?token=x'));
    now = new Date(now.getTime() + 60_000);
    expect((await server.fetch('/api/auth/get-session')).status).toBe(200);
    expect((await signUp(server)).response.status).toBe(200);
  });
});

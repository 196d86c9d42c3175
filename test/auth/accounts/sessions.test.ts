import { randomToken } from '../../../src/ids.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { createUser } from '../../support/users.ts';
import { bearer, cookieValue, post, sessionCookie, signIn, signUp } from './clients.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const WEB = 'https://app.example.com';
let now = new Date('2030-01-06T10:00:00.000Z');
const advance = (ms: number) => {
  now = new Date(now.getTime() + ms);
};
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    env: { AUTH_RATE_LIMIT_PER_MINUTE: '1000', EMAIL_PROVIDER: 'none', WEB_URL: WEB },
    overrides: { now: () => now },
  });
});
afterAll(() => server?.close());

/** A browser: sends the cookie it was given, and an Origin on POSTs. */
function browser(cookie: string) {
  return {
    get: (path: string) => server.fetch(path, { headers: { cookie } }),
    post: (path: string, body?: unknown) => server.fetch(path, post(body, { cookie, origin: WEB })),
  };
}

async function signedUpBrowser() {
  const { response, body, email } = await signUp(server);
  const line = sessionCookie(response)!;
  return { email, user: body.user, token: body.token as string, cookie: `session=${cookieValue(line)}` };
}

describe('auth.getSession', () => {
  it('answers null without a session, or with a token that is not one', async () => {
    for (const headers of [{}, bearer('nope'), bearer(`${'a'.repeat(24)}.${'b'.repeat(52)}`), { cookie: 'session=garbage' }]) {
      const response = await server.fetch('/api/auth/get-session', { headers });
      expect(response.status).toBe(200);
      expect(await response.json()).toBeNull();
    }
  });

  it('answers the session and its user, for bearer and cookie clients alike', async () => {
    const { token, cookie, user } = await signedUpBrowser();
    for (const headers of [bearer(token), { cookie }]) {
      const body = await (await server.fetch('/api/auth/get-session', { headers })).json();
      expect(body.user).toEqual(user);
      expect(body.session).toEqual({
        id: token.split('.')[0],
        userId: user.id,
        createdAt: now.toISOString(),
        lastVerifiedAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + 30 * DAY).toISOString(),
        ipAddress: '127.0.0.1',
        userAgent: expect.any(String),
        impersonatedBy: null,
        current: true,
      });
    }
  });
});

describe('auth.signOut', () => {
  it('a cookie client must send a trusted Origin; then the session ends and the cookie is expired', async () => {
    const { cookie } = await signedUpBrowser();
    const noOrigin = await server.fetch('/api/auth/sign-out', post(undefined, { cookie }));
    expect(noOrigin.status).toBe(403);
    expect(await noOrigin.json()).toMatchObject({ code: 'FORBIDDEN', defined: true });
    const foreign = await server.fetch('/api/auth/sign-out', post(undefined, { cookie, origin: 'https://evil.example.com' }));
    expect(foreign.status).toBe(403);
    expect(await (await browser(cookie).get('/api/auth/get-session')).json()).not.toBeNull();

    const out = await browser(cookie).post('/api/auth/sign-out');
    expect(out.status).toBe(200);
    expect(await out.json()).toEqual({ success: true });
    expect(sessionCookie(out)).toBe('session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax');
    expect(await (await browser(cookie).get('/api/auth/get-session')).json()).toBeNull();
  });

  it('a bearer client signs out without an Origin; the token stops working', async () => {
    const { token } = await signedUpBrowser();
    const out = await server.fetch('/api/auth/sign-out', post(undefined, bearer(token)));
    expect(out.status).toBe(200);
    expect((await server.fetch('/api/auth/list-sessions', { headers: bearer(token) })).status).toBe(401);
  });

  it('ends only the session it was made with', async () => {
    const { email, token } = await signedUpBrowser();
    const second = await signIn(server, email);
    await server.fetch('/api/auth/sign-out', post(undefined, bearer(second.token)));
    expect((await server.fetch('/api/auth/list-sessions', { headers: bearer(token) })).status).toBe(200);
  });
});

describe('auth.listSessions', () => {
  it('lists the live sessions newest first, marks the current one, and never answers a token', async () => {
    const { email, token } = await signedUpBrowser();
    advance(60_000);
    const second = await signIn(server, email, undefined, { 'user-agent': 'phone/2' });
    const other = await createUser(server.db, { now });
    const response = await server.fetch('/api/auth/list-sessions', { headers: bearer(token) });
    const sessions = await response.json();
    expect(sessions.map((s: any) => s.id)).toEqual([second.token.split('.')[0], token.split('.')[0]]);
    expect(sessions.map((s: any) => s.current)).toEqual([false, true]);
    expect(sessions[0].userAgent).toBe('phone/2');
    expect(sessions.some((s: any) => s.userId === other.id)).toBe(false);
    const text = JSON.stringify(sessions);
    expect(text).not.toContain(token.split('.')[1]);
    expect(text).not.toContain(second.token.split('.')[1]);
  });
});

describe('auth.revokeSession', () => {
  it('revokes another session of the caller, keeping the cookie', async () => {
    const { email, token } = await signedUpBrowser();
    const second = await signIn(server, email);
    const response = await server.fetch('/api/auth/revoke-session', post({ id: second.token.split('.')[0] }, bearer(token)));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: true });
    expect(sessionCookie(response)).toBeUndefined();
    expect((await server.fetch('/api/auth/list-sessions', { headers: bearer(second.token) })).status).toBe(401);
    expect((await server.fetch('/api/auth/list-sessions', { headers: bearer(token) })).status).toBe(200);
  });

  it("answers 404 for an unknown id and for another user's session, which keeps working", async () => {
    const { token } = await signedUpBrowser();
    const stranger = await createUser(server.db, { now });
    // A well-formed session id that names no session (the contract refuses other shapes with 400).
    for (const id of [randomToken(), stranger.token.split('.')[0]!]) {
      const response = await server.fetch('/api/auth/revoke-session', post({ id }, bearer(token)));
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ code: 'NOT_FOUND', defined: true });
    }
    expect((await server.fetch('/api/auth/list-sessions', { headers: stranger.headers })).status).toBe(200);
  });

  it('revoking the current session signs this client out and expires the cookie', async () => {
    const { token, cookie } = await signedUpBrowser();
    const response = await browser(cookie).post('/api/auth/revoke-session', { id: token.split('.')[0] });
    expect(response.status).toBe(200);
    expect(sessionCookie(response)).toBe('session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax');
    expect(await (await browser(cookie).get('/api/auth/get-session')).json()).toBeNull();
  });

  it('answers 400 without an id', async () => {
    const { token } = await signedUpBrowser();
    expect((await server.fetch('/api/auth/revoke-session', post({}, bearer(token)))).status).toBe(400);
  });
});

describe('auth.revokeOtherSessions and auth.revokeSessions', () => {
  it('revoke-other-sessions keeps only the current session', async () => {
    const { email, token } = await signedUpBrowser();
    const others = [await signIn(server, email), await signIn(server, email)];
    const response = await server.fetch('/api/auth/revoke-other-sessions', post(undefined, bearer(token)));
    expect(await response.json()).toEqual({ status: true });
    expect(sessionCookie(response)).toBeUndefined();
    for (const other of others) expect((await server.fetch('/api/auth/list-sessions', { headers: bearer(other.token) })).status).toBe(401);
    const left = await (await server.fetch('/api/auth/list-sessions', { headers: bearer(token) })).json();
    expect(left).toHaveLength(1);
  });

  it('revoke-sessions ends every session, this one included, and expires the cookie', async () => {
    const { email, cookie } = await signedUpBrowser();
    const other = await signIn(server, email);
    const response = await browser(cookie).post('/api/auth/revoke-sessions');
    expect(await response.json()).toEqual({ status: true });
    expect(sessionCookie(response)).toBe('session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax');
    expect(await (await browser(cookie).get('/api/auth/get-session')).json()).toBeNull();
    expect((await server.fetch('/api/auth/list-sessions', { headers: bearer(other.token) })).status).toBe(401);
  });
});

describe('signed-in routes without a session', () => {
  const routes = [
    ['POST', '/api/auth/sign-out', undefined],
    ['GET', '/api/auth/list-sessions', undefined],
    ['POST', '/api/auth/revoke-session', { id: 'x' }],
    ['POST', '/api/auth/revoke-other-sessions', undefined],
    ['POST', '/api/auth/revoke-sessions', undefined],
    ['POST', '/api/auth/change-password', { currentPassword: 'x', newPassword: 'long enough' }],
  ] as const;
  for (const [method, path, body] of routes) {
    it(`${method} ${path} answers 401 UNAUTHORIZED`, async () => {
      const response = await server.fetch(path, method === 'GET' ? {} : post(body, bearer('not-a-session')));
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    });
  }
});

describe('session lifetime (7 days idle, 30 days at most, renewed hourly)', () => {
  it('renews at most hourly: set-auth-token for everyone, the cookie again for cookie clients', async () => {
    const { token, cookie } = await signedUpBrowser();
    advance(59 * 60_000);
    const early = await browser(cookie).get('/api/auth/get-session');
    expect(early.headers.get('set-auth-token')).toBeNull();
    expect(sessionCookie(early)).toBeUndefined();

    advance(2 * 60_000);
    const renewed = await browser(cookie).get('/api/auth/get-session');
    expect(renewed.headers.get('set-auth-token')).toBe(token);
    expect(sessionCookie(renewed)).toBe(`session=${token}; Path=/; Max-Age=${7 * 24 * 3600}; HttpOnly; SameSite=Lax`);
    expect((await renewed.json()).session.lastVerifiedAt).toBe(now.toISOString());

    advance(HOUR + 1000);
    const viaBearer = await server.fetch('/api/auth/list-sessions', { headers: bearer(token) });
    expect(viaBearer.headers.get('set-auth-token')).toBe(token);
    expect(sessionCookie(viaBearer)).toBeUndefined(); // a bearer client gets no cookie it never had
  });

  it('ends a session unused for 7 days', async () => {
    const { token } = await signedUpBrowser();
    advance(7 * DAY - 1000);
    expect(await (await server.fetch('/api/auth/get-session', { headers: bearer(token) })).json()).not.toBeNull();
    advance(7 * DAY - 1000); // still within 7 days of that use
    expect(await (await server.fetch('/api/auth/get-session', { headers: bearer(token) })).json()).not.toBeNull();
    advance(7 * DAY);
    expect(await (await server.fetch('/api/auth/get-session', { headers: bearer(token) })).json()).toBeNull();
    expect((await server.fetch('/api/auth/list-sessions', { headers: bearer(token) })).status).toBe(401);
    expect(await server.db.sql`select id from sessions where id = ${token.split('.')[0]!}`).toHaveLength(0);
  });

  it('ends a session 30 days after sign-in however often it is used; the last cookies carry the time left', async () => {
    const { token, cookie } = await signedUpBrowser();
    for (let day = 6; day <= 24; day += 6) {
      advance(6 * DAY);
      expect(await (await server.fetch('/api/auth/get-session', { headers: bearer(token) })).json(), `day ${day}`).not.toBeNull();
    }
    advance(5 * DAY); // day 29
    const last = await browser(cookie).get('/api/auth/get-session');
    expect(sessionCookie(last)).toBe(`session=${token}; Path=/; Max-Age=${24 * 3600}; HttpOnly; SameSite=Lax`);
    advance(DAY); // day 30
    expect(await (await server.fetch('/api/auth/get-session', { headers: bearer(token) })).json()).toBeNull();
  });

  it('a session due for renewal that signs out still ends with the cookie expired', async () => {
    const { cookie } = await signedUpBrowser();
    advance(2 * HOUR);
    const out = await browser(cookie).post('/api/auth/sign-out');
    expect(out.status).toBe(200);
    expect(sessionCookie(out)).toBe('session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax');
  });
});

/** auth.admin.impersonateUser and auth.admin.stopImpersonating, for bearer and cookie clients. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { createUser, type TestUser } from '../../support/users.ts';

let server: TestServer;
let admin: TestUser;
let target: TestUser;
let now = new Date(Math.floor(Date.now() / 1000) * 1000);

beforeAll(async () => {
  server = await startTestServer({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '1000' }, overrides: { now: () => now } });
  admin = await createUser(server.db, { role: 'admin', now });
  target = await createUser(server.db, { email: 'target@example.com', now });
});
afterAll(() => server.close());

function post(path: string, headers: Record<string, string>, body?: unknown) {
  return server.fetch(`/api/auth/admin/${path}`, {
    method: 'POST',
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function me(headers: Record<string, string>) {
  const response = await server.fetch('/api/v1/me', { headers });
  return response.status === 200 ? ((await response.json()) as { id: string }).id : response.status;
}

async function impersonate(as: TestUser = admin, userId = target.id) {
  const response = await post('impersonate-user', as.headers, { userId });
  expect(response.status).toBe(200);
  return { response, body: await response.json(), token: response.headers.get('set-auth-token')! };
}

describe('auth.admin.impersonateUser', () => {
  it('signs the client in as the user for 1 hour, recording the admin; audited', async () => {
    const { response, body, token } = await impersonate();
    expect(token).toMatch(/^[a-z2-7]{24}\.[a-z2-7]{52}$/);
    expect(response.headers.get('set-cookie')).toMatch(new RegExp(`^session=${token.replace('.', '\\.')}; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax`));
    expect(body.user).toMatchObject({ id: target.id, email: 'target@example.com' });
    expect(body.session).toMatchObject({
      id: token.split('.')[0],
      userId: target.id,
      impersonatedBy: admin.id,
      current: true,
      expiresAt: new Date(now.getTime() + 3600_000).toISOString(),
    });
    expect(await me(bearer(token))).toBe(target.id);
    expect(await me(admin.headers)).toBe(admin.id); // the admin's own session goes on

    const [entry] = await server.db.sql`select * from audit_log where action = 'user.impersonation_started' and metadata->>'sessionId' = ${body.session.id}`;
    expect(entry).toMatchObject({ organization_id: null, actor_id: admin.id, target_type: 'user', target_id: target.id });
  });

  it('ends after an hour', async () => {
    const { token } = await impersonate();
    const start = now;
    try {
      now = new Date(start.getTime() + 3600_000);
      expect(await me(bearer(token))).toBe(401);
    } finally {
      now = start;
    }
  });

  it('refuses another admin, oneself, a banned user (403) and an unknown user (404)', async () => {
    const other = await createUser(server.db, { role: 'admin', now });
    const banned = await createUser(server.db, { now });
    await server.db.sql`update users set banned = true where id = ${banned.id}`;
    for (const [userId, message] of [
      [other.id, /admins cannot/],
      [admin.id, /yourself/],
      [banned.id, /Banned/],
    ] as const) {
      const response = await post('impersonate-user', admin.headers, { userId });
      expect(response.status, userId).toBe(403);
      expect((await response.json()).message).toMatch(message);
    }
    expect((await post('impersonate-user', admin.headers, { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa' })).status).toBe(404);
    expect((await post('impersonate-user', admin.headers, {})).status).toBe(400);
  });

  it.each([
    ['banned', 'ban-user', {}],
    ['demoted', 'set-role', { role: 'user' }],
    ['signed out everywhere', 'revoke-user-sessions', {}],
  ])('ends when the admin behind it is %s', async (_what, route, extra) => {
    const impersonator = await createUser(server.db, { role: 'admin', now });
    const { token } = await impersonate(impersonator);
    expect(await me(bearer(token))).toBe(target.id);
    expect((await post(route, admin.headers, { userId: impersonator.id, ...extra })).status).toBe(200);
    expect(await me(bearer(token))).toBe(401);
  });

  it('cannot be nested: an impersonation session is not a platform admin', async () => {
    const { token } = await impersonate();
    const other = await createUser(server.db, { now });
    const response = await post('impersonate-user', bearer(token), { userId: other.id });
    expect(response.status).toBe(403);
  });
});

describe('auth.admin.stopImpersonating', () => {
  it('a bearer client gets the admin back with a new session; the impersonation session ends; audited', async () => {
    const { token, body: started } = await impersonate();
    const response = await post('stop-impersonating', bearer(token));
    expect(response.status).toBe(200);
    const body = await response.json();
    const adminToken = response.headers.get('set-auth-token')!;
    expect(adminToken).toMatch(/^[a-z2-7]{24}\.[a-z2-7]{52}$/);
    expect(body.user).toMatchObject({ id: admin.id, role: 'admin' });
    expect(body.session).toMatchObject({ id: adminToken.split('.')[0], userId: admin.id, impersonatedBy: null, current: true });
    expect(await me(bearer(token))).toBe(401);
    expect(await me(bearer(adminToken))).toBe(admin.id);

    const [entry] = await server.db.sql`select * from audit_log where action = 'user.impersonation_stopped' and metadata->>'impersonationSessionId' = ${started.session.id}`;
    expect(entry).toMatchObject({ organization_id: null, actor_id: admin.id, target_id: target.id, metadata: { sessionId: body.session.id } });
  });

  it('a cookie client from a trusted origin gets the admin cookie back', async () => {
    const { token } = await impersonate();
    // The trusted origins include PUBLIC_URL's.
    const cookieHeaders = { cookie: `session=${token}`, origin: new URL(server.services.config.publicUrl).origin };
    const response = await post('stop-impersonating', cookieHeaders);
    expect(response.status).toBe(200);
    const adminToken = response.headers.get('set-auth-token')!;
    expect(response.headers.get('set-cookie')).toContain(`session=${adminToken};`);
    expect(await me({ cookie: `session=${adminToken}` })).toBe(admin.id);
  });

  it('refuses a cookie request without a trusted Origin (403)', async () => {
    const { token } = await impersonate();
    const response = await post('stop-impersonating', { cookie: `session=${token}` });
    expect(response.status).toBe(403);
    expect(await me(bearer(token))).toBe(target.id);
  });

  it('answers 412 to a session that is not an impersonation session, 401 without one, 400 with a body', async () => {
    const response = await post('stop-impersonating', admin.headers);
    expect(response.status).toBe(412);
    expect((await response.json()).code).toBe('PRECONDITION_FAILED');
    expect((await post('stop-impersonating', {})).status).toBe(401);
    expect((await post('stop-impersonating', target.headers, { userId: admin.id })).status).toBe(400);
  });

  it('refuses when the admin behind the session has been banned meanwhile (403)', async () => {
    const otherAdmin = await createUser(server.db, { role: 'admin', now });
    const { token } = await impersonate(otherAdmin);
    await server.db.sql`update users set banned = true where id = ${otherAdmin.id}`;
    const response = await post('stop-impersonating', bearer(token));
    expect(response.status).toBe(403);
  });
});

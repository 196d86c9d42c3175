/** user.me over REST and RPC, and system.authConfig's requireEmailVerification. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createUser, type TestUser } from '../support/users.ts';

let server: TestServer;
let ada: TestUser;

beforeAll(async () => {
  server = await startTestServer({ env: { REQUIRE_EMAIL_VERIFICATION: 'true' } });
  ada = await createUser(server.db, { email: 'ada@example.com', name: 'Ada Lovelace' });
  await server.db.sql`update users set created_at = '2026-11-02T14:30:00.000Z' where id = ${ada.id}`;
});
afterAll(() => server.close());

describe('user.me', () => {
  it('answers the signed-in user over REST', async () => {
    const response = await server.fetch('/api/v1/me', { headers: ada.headers });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: ada.id, email: 'ada@example.com', name: 'Ada Lovelace', image: null, role: null, createdAt: '2026-11-02T14:30:00.000Z' });
  });

  it('answers the same over RPC', async () => {
    const response = await server.fetch('/rpc/user/me', { method: 'POST', headers: { ...ada.headers, 'content-type': 'application/json' }, body: JSON.stringify({ json: {} }) });
    expect(response.status).toBe(200);
    expect((await response.json()).json).toMatchObject({ id: ada.id, email: 'ada@example.com' });
  });

  it('shows a role change at once', async () => {
    const grace = await createUser(server.db);
    await server.db.sql`update users set role = 'admin', image = 'https://img.example.com/g.png' where id = ${grace.id}`;
    expect(await (await server.fetch('/api/v1/me', { headers: grace.headers })).json()).toMatchObject({ role: 'admin', image: 'https://img.example.com/g.png' });
  });

  it('should require access: 401 without a session, with an unknown token, or after the session ended', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }, { cookie: 'session=abc.def' }]) {
      const response = await server.fetch('/api/v1/me', { headers });
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    }
    const gone = await createUser(server.db);
    await server.db.sql`delete from sessions where user_id = ${gone.id}`;
    expect((await server.fetch('/api/v1/me', { headers: gone.headers })).status).toBe(401);
  });

  it('refuses input it does not take (400)', async () => {
    expect((await server.fetch('/api/v1/me?extra=1', { headers: ada.headers })).status).toBe(400);
  });
});

describe('system.authConfig', () => {
  it('reports requireEmailVerification and no providers when none is configured', async () => {
    const response = await server.fetch('/api/v1/auth-config');
    expect(await response.json()).toEqual({ socialProviders: [], requireEmailVerification: true });
  });

  it('lists a provider once its client id and secret are set', async () => {
    const github = await startTestServer({ env: { GITHUB_CLIENT_ID: 'id', GITHUB_CLIENT_SECRET: 'secret' }, db: server.db });
    try {
      expect(await (await github.fetch('/api/v1/auth-config')).json()).toEqual({ socialProviders: ['github'], requireEmailVerification: false });
    } finally {
      await github.close();
    }
  });
});

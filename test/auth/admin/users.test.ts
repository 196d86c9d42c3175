/** auth.admin.listUsers, setRole, banUser, unbanUser, revokeUserSessions, removeUser. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { addMembership, createUser, type TestUser } from '../../support/users.ts';

let server: TestServer;
let admin: TestUser;
let plain: TestUser;
// Whole seconds, so dates survive the round trip through the database exactly.
const now = new Date(Math.floor(Date.now() / 1000) * 1000);

beforeAll(async () => {
  server = await startTestServer({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '1000' }, overrides: { now: () => now } });
  admin = await createUser(server.db, { role: 'admin', email: 'root@example.com', name: 'Root Admin', now });
  plain = await createUser(server.db, { now });
});
afterAll(() => server.close());

function post(path: string, user: TestUser | null, body: unknown) {
  return server.fetch(`/api/auth/admin/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...user?.headers },
    body: JSON.stringify(body),
  });
}

async function auditOf(action: string, targetId: string) {
  return server.db.sql`select * from audit_log where action = ${action} and target_id = ${targetId} order by created_at`;
}

async function canUse(user: TestUser): Promise<boolean> {
  const response = await server.fetch('/api/v1/me', { headers: user.headers });
  return response.status === 200;
}

describe('every admin route', () => {
  const routes: [string, string, unknown][] = [
    ['GET', 'list-users', undefined],
    ['POST', 'set-role', { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa', role: 'admin' }],
    ['POST', 'ban-user', { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa' }],
    ['POST', 'unban-user', { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa' }],
    ['POST', 'impersonate-user', { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa' }],
    ['POST', 'revoke-user-sessions', { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa' }],
    ['POST', 'remove-user', { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa' }],
  ];
  it.each(routes)('%s %s answers 401 without a session and 403 to a user who is not a platform admin', async (method, path, body) => {
    const init = (user: TestUser | null): RequestInit => ({
      method,
      headers: { 'content-type': 'application/json', ...user?.headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const anonymous = await server.fetch(`/api/auth/admin/${path}`, init(null));
    expect(anonymous.status).toBe(401);
    const refused = await server.fetch(`/api/auth/admin/${path}`, init(plain));
    expect(refused.status).toBe(403);
    expect((await refused.json()).code).toBe('FORBIDDEN');
  });
});

describe('auth.admin.listUsers', () => {
  beforeAll(async () => {
    for (const [index, name] of ['Ada Lovelace', 'Grace Hopper', 'Alan Turing'].entries()) {
      await createUser(server.db, { email: `${name.split(' ')[0]!.toLowerCase()}.list@Example.com`, name, now: new Date(now.getTime() - (index + 1) * 60_000) });
    }
  });

  it('pages through every user, newest first, with the total', async () => {
    const all = await (await server.fetch('/api/auth/admin/list-users?limit=100', { headers: admin.headers })).json();
    expect(all.total).toBe(all.users.length);
    const created = all.users.map((user: { createdAt: string }) => Date.parse(user.createdAt));
    expect(created).toEqual([...created].sort((a, b) => b - a));

    const page = await (await server.fetch('/api/auth/admin/list-users?limit=2&offset=1', { headers: admin.headers })).json();
    expect(page.total).toBe(all.total);
    expect(page.users.map((user: { id: string }) => user.id)).toEqual(all.users.slice(1, 3).map((user: { id: string }) => user.id));
  });

  it('searches email (the default field) case-insensitively by substring', async () => {
    const response = await server.fetch('/api/auth/admin/list-users?searchValue=LIST%40EXAMPLE', { headers: admin.headers });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.total).toBe(3);
    expect(body.users.map((user: { name: string }) => user.name)).toEqual(['Ada Lovelace', 'Grace Hopper', 'Alan Turing']);
  });

  it('searches names, and takes % and _ literally', async () => {
    const byName = await (await server.fetch('/api/auth/admin/list-users?searchField=name&searchValue=gRaCe', { headers: admin.headers })).json();
    expect(byName).toMatchObject({ total: 1, users: [{ name: 'Grace Hopper', email: 'grace.list@Example.com', banned: false, emailVerified: true }] });
    const wildcard = await (await server.fetch('/api/auth/admin/list-users?searchField=name&searchValue=%25', { headers: admin.headers })).json();
    expect(wildcard).toEqual({ users: [], total: 0 });
  });

  it('answers the total even past the last page', async () => {
    const body = await (await server.fetch('/api/auth/admin/list-users?searchValue=list%40&offset=10', { headers: admin.headers })).json();
    expect(body).toEqual({ users: [], total: 3 });
  });

  it.each([['limit=0'], ['limit=101'], ['offset=-1'], ['searchField=role'], [`searchValue=${'x'.repeat(101)}`]])('refuses %s with 400', async (query) => {
    const response = await server.fetch(`/api/auth/admin/list-users?${query}`, { headers: admin.headers });
    expect(response.status).toBe(400);
    expect((await response.json()).code).toBe('BAD_REQUEST');
  });
});

describe('auth.admin.setRole', () => {
  it('makes a user a platform admin and back, audited at platform level', async () => {
    const target = await createUser(server.db, { now });
    const promoted = await post('set-role', admin, { userId: target.id, role: 'admin' });
    expect(promoted.status).toBe(200);
    expect((await promoted.json()).user).toMatchObject({ id: target.id, role: 'admin' });
    // Takes effect at once: the target can now call an admin route with the session it had.
    expect((await server.fetch('/api/auth/admin/list-users', { headers: target.headers })).status).toBe(200);

    const demoted = await post('set-role', admin, { userId: target.id, role: 'user' });
    expect((await demoted.json()).user.role).toBe('user');
    expect((await server.fetch('/api/auth/admin/list-users', { headers: target.headers })).status).toBe(403);

    const entries = await auditOf('user.role_changed', target.id);
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatchObject({ organization_id: null, actor_id: admin.id, actor_email: admin.email, target_type: 'user', metadata: { from: null, to: 'admin' } });
    expect(entries[1]!.metadata).toEqual({ from: 'admin', to: 'user' });
  });

  it('refuses to change one’s own role (403), an unknown user (404) and a role outside the contract (400)', async () => {
    const self = await post('set-role', admin, { userId: admin.id, role: 'user' });
    expect(self.status).toBe(403);
    expect((await self.json()).message).toMatch(/your own/);
    expect((await post('set-role', admin, { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa', role: 'admin' })).status).toBe(404);
    expect((await post('set-role', admin, { userId: plain.id, role: 'owner' })).status).toBe(400);
  });
});

describe('auth.admin.banUser and unbanUser', () => {
  it('bans for a while: sessions end, banExpiresAt is now + banExpiresIn, audited', async () => {
    const target = await createUser(server.db, { now });
    expect(await canUse(target)).toBe(true);
    const response = await post('ban-user', admin, { userId: target.id, banReason: 'Repeated spam uploads.', banExpiresIn: 3600 });
    expect(response.status).toBe(200);
    expect((await response.json()).user).toMatchObject({
      id: target.id,
      banned: true,
      banReason: 'Repeated spam uploads.',
      banExpiresAt: new Date(now.getTime() + 3600_000).toISOString(),
    });
    expect(await canUse(target)).toBe(false);
    const [{ count }] = await server.db.sql<[{ count: number }]>`select count(*)::int as count from sessions where user_id = ${target.id}`;
    expect(count).toBe(0);
    const [entry] = await auditOf('user.banned', target.id);
    expect(entry).toMatchObject({ organization_id: null, actor_id: admin.id, metadata: { reason: 'Repeated spam uploads.', sessionsEnded: 1 } });
  });

  it('bans for good without banExpiresIn; banning again replaces the reason; unban lifts it', async () => {
    const target = await createUser(server.db, { now });
    const first = await (await post('ban-user', admin, { userId: target.id })).json();
    expect(first.user).toMatchObject({ banned: true, banReason: null, banExpiresAt: null });
    const again = await (await post('ban-user', admin, { userId: target.id, banReason: 'Fraud.' })).json();
    expect(again.user).toMatchObject({ banned: true, banReason: 'Fraud.', banExpiresAt: null });

    const lifted = await post('unban-user', admin, { userId: target.id });
    expect(lifted.status).toBe(200);
    expect((await lifted.json()).user).toMatchObject({ banned: false, banReason: null, banExpiresAt: null });
    expect(await auditOf('user.unbanned', target.id)).toHaveLength(1);
  });

  it('unbanning a user who is not banned changes nothing', async () => {
    const target = await createUser(server.db, { now: new Date(now.getTime() - 1000) });
    const response = await post('unban-user', admin, { userId: target.id });
    expect(response.status).toBe(200);
    const { user } = await response.json();
    expect(user).toMatchObject({ banned: false, updatedAt: new Date(now.getTime() - 1000).toISOString() });
    expect(await auditOf('user.unbanned', target.id)).toHaveLength(0);
    expect(await canUse(target)).toBe(true);
  });

  it('refuses to ban oneself (403), unknown users (404) and bans shorter than a minute (400)', async () => {
    expect((await post('ban-user', admin, { userId: admin.id })).status).toBe(403);
    expect(await canUse(admin)).toBe(true);
    expect((await post('ban-user', admin, { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa' })).status).toBe(404);
    expect((await post('unban-user', admin, { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa' })).status).toBe(404);
    expect((await post('ban-user', admin, { userId: plain.id, banExpiresIn: 59 })).status).toBe(400);
    expect((await post('ban-user', admin, { userId: plain.id, banReason: 'two\nlines' })).status).toBe(400);
  });
});

describe('auth.admin.revokeUserSessions', () => {
  it('ends every session of the user, audited with the count', async () => {
    const target = await createUser(server.db, { now });
    const response = await post('revoke-user-sessions', admin, { userId: target.id });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ success: true });
    expect(await canUse(target)).toBe(false);
    const [entry] = await auditOf('user.sessions_revoked', target.id);
    expect(entry).toMatchObject({ organization_id: null, actor_id: admin.id, metadata: { count: 1 } });
  });

  it('answers 404 for an unknown user', async () => {
    expect((await post('revoke-user-sessions', admin, { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa' })).status).toBe(404);
  });
});

describe('auth.admin.removeUser', () => {
  it('deletes the user with sessions, accounts and memberships; audited first', async () => {
    const target = await createUser(server.db, { now });
    const owner = await createUser(server.db, { now });
    const organizationId = await addMembership(server.db, owner, 'owner');
    await addMembership(server.db, target, 'member', organizationId);

    const response = await post('remove-user', admin, { userId: target.id });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ success: true });
    for (const table of ['users', 'sessions', 'accounts', 'members']) {
      const column = table === 'users' ? 'id' : 'user_id';
      const [{ count }] = await server.db.sql<[{ count: number }]>`select count(*)::int as count from ${server.db.sql(table)} where ${server.db.sql(column)} = ${target.id}`;
      expect(count, table).toBe(0);
    }
    const [entry] = await auditOf('user.removed', target.id);
    expect(entry).toMatchObject({ organization_id: null, actor_id: admin.id, metadata: { email: target.email } });
  });

  it('refuses 409 while the user is the last owner of an organization, and allows it once there is another', async () => {
    const target = await createUser(server.db, { now });
    const organizationId = await addMembership(server.db, target, 'owner');
    const refused = await post('remove-user', admin, { userId: target.id });
    expect(refused.status).toBe(409);
    const body = await refused.json();
    expect(body.code).toBe('CONFLICT');
    expect(body.message).toContain(organizationId);
    expect(await canUse(target)).toBe(true);
    expect(await auditOf('user.removed', target.id)).toHaveLength(0);

    const coOwner = await createUser(server.db, { now });
    await addMembership(server.db, coOwner, 'owner', organizationId);
    expect((await post('remove-user', admin, { userId: target.id })).status).toBe(200);
    // The co-owner is now the last owner.
    expect((await post('remove-user', admin, { userId: coOwner.id })).status).toBe(409);
  });

  it('two admins removing the two owners of one organization at once leave one of them', async () => {
    const second = await createUser(server.db, { role: 'admin', now });
    const [a, b] = [await createUser(server.db, { now }), await createUser(server.db, { now })];
    const organizationId = await addMembership(server.db, a, 'owner');
    await addMembership(server.db, b, 'owner', organizationId);
    const statuses = await Promise.all([post('remove-user', admin, { userId: a.id }), post('remove-user', second, { userId: b.id })]);
    expect(statuses.map((response) => response.status).sort()).toEqual([200, 409]);
    const [{ count }] = await server.db.sql<[{ count: number }]>`select count(*)::int as count from members where organization_id = ${organizationId} and role = 'owner'`;
    expect(count).toBe(1);
  });

  it('refuses oneself (403) and unknown users (404)', async () => {
    expect((await post('remove-user', admin, { userId: admin.id })).status).toBe(403);
    expect((await post('remove-user', admin, { userId: 'usr_aaaaaaaaaaaaaaaaaaaaaaaa' })).status).toBe(404);
    expect((await post('remove-user', admin, {})).status).toBe(400);
  });
});

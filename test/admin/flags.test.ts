/**
 * admin.flags.* and system.flags on the real stack: create and update with PUT semantics,
 * overrides set and removed, delete taking the overrides along, the 404s, the key pattern and
 * description bounds, the platform-level audit entries, and what system.flags shows to a member,
 * a non-member and a caller without organizationId. (The generic 401/403 sweep is access.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

let server: TestServer;
let admin: TestUser, member: TestUser, stranger: TestUser;
let org: string, otherOrg: string;
beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000' }, aiService: false });
  [admin, member, stranger] = await Promise.all([createUser(server.db, { role: 'admin' }), createUser(server.db), createUser(server.db)]);
  org = await addMembership(server.db, member, 'member');
  otherOrg = await addMembership(server.db, stranger, 'owner');
});
afterAll(() => server.close());

const client = (user: TestUser) => createClient({ baseUrl: server.origin, token: user.token, fetch: clientFetch(server) });
const json = (user: TestUser, method: string, path: string, body?: unknown) =>
  server.fetch(`/api/v1${path}`, {
    method,
    headers: { ...user.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

describe('admin.flags.upsert', () => {
  it('creates a flag with defaults for what is left out, then changes only what is sent', async () => {
    const created = await (await json(admin, 'PUT', '/admin/flags/search.hybrid')).json();
    expect(created).toMatchObject({ key: 'search.hybrid', description: '', enabled: false, overrides: [] });

    const enabled = await client(admin).admin.flags.upsert({ key: 'search.hybrid', enabled: true });
    expect(enabled).toMatchObject({ description: '', enabled: true });
    expect(enabled.createdAt).toEqual(new Date(created.createdAt));

    const described = await client(admin).admin.flags.upsert({ key: 'search.hybrid', description: 'Blend keyword and vector ranking.' });
    expect(described).toMatchObject({ description: 'Blend keyword and vector ranking.', enabled: true });

    // Nothing changed: updatedAt stays.
    const same = await client(admin).admin.flags.upsert({ key: 'search.hybrid', enabled: true });
    expect(same.updatedAt).toEqual(described.updatedAt);
  });

  it.each([
    ['a key with capitals', '/admin/flags/Search', {}, 'key'],
    ['a one-character key', '/admin/flags/a', {}, 'key'],
    ['a key starting with a dot', '/admin/flags/.hidden', {}, 'key'],
    [`a ${65}-character key`, `/admin/flags/${'k'.repeat(65)}`, {}, 'key'],
    ['a description over 200 characters', '/admin/flags/long.text', { description: 'x'.repeat(201) }, 'description'],
    ['a description of two lines', '/admin/flags/two.lines', { description: 'one\ntwo' }, 'description'],
    ['enabled as a string', '/admin/flags/string.enabled', { enabled: 'true' }, 'enabled'],
  ])('refuses %s (400)', async (_case, path, body, field) => {
    const response = await json(admin, 'PUT', path, body);
    expect(response.status).toBe(400);
    expect((await response.json()).data.issues[0].path).toEqual([field]);
  });

  it('accepts a description of exactly 200 characters and a 64-character key', async () => {
    const key = `k${'0'.repeat(63)}`;
    expect(await client(admin).admin.flags.upsert({ key, description: 'd'.repeat(200) })).toMatchObject({ key, description: 'd'.repeat(200) });
    await client(admin).admin.flags.delete({ key });
  });
});

describe('admin.flags.setOverride and system.flags', () => {
  it('forces a value for one organization; null removes it; system.flags applies it for members only', async () => {
    await client(admin).admin.flags.upsert({ key: 'uploads.multipart', enabled: false });
    const set = await client(admin).admin.flags.setOverride({ key: 'uploads.multipart', organizationId: org, enabled: true });
    expect(set.overrides).toEqual([{ organizationId: org, enabled: true }]);
    expect(set.updatedAt.getTime()).toBeGreaterThanOrEqual(set.createdAt.getTime());

    expect((await client(member).system.flags({ organizationId: org }))['uploads.multipart']).toBe(true);
    expect((await client(member).system.flags({}))['uploads.multipart']).toBe(false);
    expect((await client(stranger).system.flags({ organizationId: otherOrg }))['uploads.multipart']).toBe(false);
    // Not a member of org: 403, over REST too.
    const refused = await server.fetch(`/api/v1/flags?organizationId=${org}`, { headers: stranger.headers });
    expect(refused.status).toBe(403);

    const removed = await client(admin).admin.flags.setOverride({ key: 'uploads.multipart', organizationId: org, enabled: null });
    expect(removed.overrides).toEqual([]);
    expect((await client(member).system.flags({ organizationId: org }))['uploads.multipart']).toBe(false);
    // Removing what is not there is not an error.
    expect((await client(admin).admin.flags.setOverride({ key: 'uploads.multipart', organizationId: org, enabled: null })).overrides).toEqual([]);
  });

  it('answers 404 for an unknown flag or organization', async () => {
    await client(admin).admin.flags.upsert({ key: 'known.flag' });
    const noFlag = await json(admin, 'PUT', `/admin/flags/unknown.flag/organizations/${org}`, { enabled: true });
    expect(noFlag.status).toBe(404);
    const noOrg = await json(admin, 'PUT', '/admin/flags/known.flag/organizations/org_aaaaaaaaaaaaaaaaaaaaaaaa', { enabled: true });
    expect(noOrg.status).toBe(404);
    expect(await noOrg.json()).toMatchObject({ code: 'NOT_FOUND', message: 'Organization not found.' });
    const noBody = await json(admin, 'PUT', `/admin/flags/known.flag/organizations/${org}`, {});
    expect(noBody.status).toBe(400);
  });

  it('a signed-in caller without organizationId gets the global defaults', async () => {
    const values = await (await server.fetch('/api/v1/flags', { headers: stranger.headers })).json();
    expect(values).toMatchObject({ 'known.flag': false });
    expect(Object.keys(values)).toEqual([...Object.keys(values)].sort());
  });
});

describe('admin.flags.delete and admin.flags.list', () => {
  it('lists every flag by key with its overrides, and deletes a flag with its overrides', async () => {
    await client(admin).admin.flags.upsert({ key: 'to.delete', enabled: true, description: 'Short-lived.' });
    await client(admin).admin.flags.setOverride({ key: 'to.delete', organizationId: org, enabled: false });
    await client(admin).admin.flags.setOverride({ key: 'to.delete', organizationId: otherOrg, enabled: true });
    const listed = await client(admin).admin.flags.list({});
    expect(listed.map((flag) => flag.key)).toEqual([...listed.map((flag) => flag.key)].sort());
    expect(listed.find((flag) => flag.key === 'to.delete')!.overrides).toEqual([
      { organizationId: org, enabled: false },
      { organizationId: otherOrg, enabled: true },
    ]);

    expect(await client(admin).admin.flags.delete({ key: 'to.delete' })).toEqual({ key: 'to.delete' });
    const [row] = await server.db.sql`select count(*)::int as count from feature_flag_overrides where flag_key = 'to.delete'`;
    expect(row!.count).toBe(0);
    expect((await client(admin).admin.flags.list({})).map((flag) => flag.key)).not.toContain('to.delete');
    expect(await client(member).system.flags({ organizationId: org })).not.toHaveProperty('to.delete');

    const again = await json(admin, 'DELETE', '/admin/flags/to.delete');
    expect(again.status).toBe(404);
    expect(await again.json()).toMatchObject({ code: 'NOT_FOUND', message: 'Feature flag not found.' });
  });

  it("an organization's deletion removes its overrides", async () => {
    const doomed = await addMembership(server.db, await createUser(server.db), 'owner');
    await client(admin).admin.flags.upsert({ key: 'org.cascade' });
    await client(admin).admin.flags.setOverride({ key: 'org.cascade', organizationId: doomed, enabled: true });
    await server.db.sql`delete from organizations where id = ${doomed}`;
    expect((await client(admin).admin.flags.list({})).find((flag) => flag.key === 'org.cascade')!.overrides).toEqual([]);
  });

  it('refuses non-admins (403), members of organizations included', async () => {
    for (const user of [member, stranger]) {
      expect((await json(user, 'GET', '/admin/flags')).status).toBe(403);
      expect((await json(user, 'PUT', '/admin/flags/known.flag', { enabled: true })).status).toBe(403);
      expect((await json(user, 'DELETE', '/admin/flags/known.flag')).status).toBe(403);
      expect((await json(user, 'PUT', `/admin/flags/known.flag/organizations/${org}`, { enabled: true })).status).toBe(403);
    }
  });
});

describe('flag changes are audited at platform level', () => {
  it('records who created, changed, overrode and deleted a flag', async () => {
    await client(admin).admin.flags.upsert({ key: 'audited.flag', description: 'First.' });
    await client(admin).admin.flags.upsert({ key: 'audited.flag', enabled: true });
    await client(admin).admin.flags.upsert({ key: 'audited.flag', enabled: true }); // no change, no entry
    await client(admin).admin.flags.setOverride({ key: 'audited.flag', organizationId: org, enabled: false });
    await client(admin).admin.flags.setOverride({ key: 'audited.flag', organizationId: org, enabled: null });
    await client(admin).admin.flags.delete({ key: 'audited.flag' });
    const entries = await server.db.sql`
      select action, organization_id as "organizationId", actor_id as "actorId", target_type as "targetType", metadata
      from audit_log where target_id = 'audited.flag' order by created_at, action`;
    expect(entries.map((entry) => entry.action)).toEqual(['flag.created', 'flag.updated', 'flag.override_set', 'flag.override_removed', 'flag.deleted']);
    for (const entry of entries) expect(entry).toMatchObject({ organizationId: null, actorId: admin.id, targetType: 'flag' });
    expect(entries[1]!.metadata).toEqual({ changes: { enabled: { from: false, to: true } } });
    expect(entries[2]!.metadata).toEqual({ organizationId: org, from: null, to: false });
    expect(entries[4]!.metadata).toEqual({ description: 'First.', enabled: true, overrides: 0 });
  });
});

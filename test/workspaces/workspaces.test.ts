/** workspaces.* against the real server: happy paths, each declared error, tenant rules. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, ApiClientError } from '../../clients/typescript/src/index.ts';
import { newId } from '../../src/ids.ts';
import type { PlanLookup } from '../../src/credits/plans.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

let server: TestServer;
let owner: TestUser, admin: TestUser, member: TestUser, stranger: TestUser;
let org: string, otherOrg: string;
// Organizations listed here are on a plan that allows two workspaces; all others are unbilled.
const limited = new Set<string>();
const plans: PlanLookup = {
  limitsFor: async (id) => (limited.has(id) ? { plan: 'free', limits: { workspaces: 2, members: 5, aiCredits: 200, storageBytes: 1024 } } : null),
};

const client = (user?: TestUser) => createClient({ baseUrl: server.origin, ...(user ? { token: user.token } : {}), fetch: clientFetch(server) });
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000' }, overrides: { plans } });
  [owner, admin, member, stranger] = await Promise.all([createUser(server.db), createUser(server.db), createUser(server.db), createUser(server.db)]);
  org = await addMembership(server.db, owner, 'owner');
  await addMembership(server.db, admin, 'admin', org);
  await addMembership(server.db, member, 'member', org);
  otherOrg = await addMembership(server.db, stranger, 'owner');
});
afterAll(() => server.close());

async function team(organizationId: string): Promise<string> {
  const id = newId('team');
  await server.db.sql`insert into teams (id, organization_id, name) values (${id}, ${organizationId}, 'Team')`;
  return id;
}

describe('workspaces', () => {
  it('creates, lists, gets with storage, updates and deletes', async () => {
    const teamId = await team(org);
    const created = await client(member).workspaces.create({ organizationId: org, name: 'Research', slug: 'research', teamId });
    expect(created).toMatchObject({ organizationId: org, name: 'Research', slug: 'research', teamId });
    expect(created.id).toMatch(/^ws_/);
    expect(created.createdAt).toBeInstanceOf(Date);

    const list = await client(member).workspaces.list({ organizationId: org });
    expect(list.map((w) => w.id)).toContain(created.id);

    const got = await client(member).workspaces.get({ organizationId: org, slug: 'research' });
    expect(got).toMatchObject({ id: created.id, storage: { usedBytes: 0, limitBytes: null } });

    const updated = await client(member).workspaces.update({ id: created.id, name: 'Research & Development', slug: 'r-and-d', teamId: null });
    expect(updated).toMatchObject({ id: created.id, name: 'Research & Development', slug: 'r-and-d', teamId: null });

    expect(await client(admin).workspaces.delete({ id: created.id })).toEqual({ id: created.id });
    expect(await failure(client(member).workspaces.get({ organizationId: org, slug: 'r-and-d' }))).toMatchObject({ status: 404, code: 'NOT_FOUND', defined: true });
  });

  it('works over plain REST with fetch too', async () => {
    const response = await server.fetch('/api/v1/workspaces', {
      method: 'POST',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ organizationId: org, name: 'Plain', slug: 'plain' }),
    });
    expect(response.status).toBe(200);
    const workspace = await response.json();
    expect(typeof workspace.createdAt).toBe('string');
    const got = await server.fetch(`/api/v1/workspaces/plain?organizationId=${org}`, { headers: owner.headers });
    expect((await got.json()).id).toBe(workspace.id);
    const patched = await server.fetch(`/api/v1/workspaces/${workspace.id}`, {
      method: 'PATCH',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Plainer' }),
    });
    expect((await patched.json()).name).toBe('Plainer');
    const deleted = await server.fetch(`/api/v1/workspaces/${workspace.id}`, { method: 'DELETE', headers: owner.headers });
    expect(await deleted.json()).toEqual({ id: workspace.id });
  });

  it('answers 409 for a slug taken in the organization, on create and update; other organizations may reuse it', async () => {
    await client(owner).workspaces.create({ organizationId: org, name: 'A', slug: 'taken' });
    expect(await failure(client(owner).workspaces.create({ organizationId: org, name: 'B', slug: 'taken' }))).toMatchObject({ status: 409, code: 'CONFLICT', defined: true });
    const other = await client(owner).workspaces.create({ organizationId: org, name: 'C', slug: 'other' });
    expect(await failure(client(owner).workspaces.update({ id: other.id, slug: 'taken' }))).toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(await client(stranger).workspaces.create({ organizationId: otherOrg, name: 'A', slug: 'taken' })).toMatchObject({ slug: 'taken' });
  });

  it('answers 404 for a team outside the organization', async () => {
    const foreignTeam = await team(otherOrg);
    expect(await failure(client(owner).workspaces.create({ organizationId: org, name: 'T', slug: 'teamed', teamId: foreignTeam }))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    const workspace = await client(owner).workspaces.create({ organizationId: org, name: 'T', slug: 'teamed' });
    expect(await failure(client(owner).workspaces.update({ id: workspace.id, teamId: foreignTeam }))).toMatchObject({ status: 404 });
    expect(await failure(client(owner).workspaces.update({ id: workspace.id, teamId: 'team_aaaaaaaaaaaaaaaaaaaaaaaa' }))).toMatchObject({ status: 404 });
  });

  it('answers 404 for an unknown workspace by id and by slug', async () => {
    expect(await failure(client(owner).workspaces.update({ id: 'ws_aaaaaaaaaaaaaaaaaaaaaaaa', name: 'x' }))).toMatchObject({ status: 404 });
    expect(await failure(client(owner).workspaces.delete({ id: 'ws_aaaaaaaaaaaaaaaaaaaaaaaa' }))).toMatchObject({ status: 404 });
    expect(await failure(client(owner).workspaces.get({ organizationId: org, slug: 'nope' }))).toMatchObject({ status: 404 });
  });

  it('limits delete to owners and admins', async () => {
    const workspace = await client(member).workspaces.create({ organizationId: org, name: 'Keep', slug: 'keep' });
    expect(await failure(client(member).workspaces.delete({ id: workspace.id }))).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    expect(await client(owner).workspaces.get({ organizationId: org, slug: 'keep' })).toMatchObject({ id: workspace.id });
  });

  it('answers 403 across tenants for every by-id procedure, changing nothing', async () => {
    const foreign = await client(stranger).workspaces.create({ organizationId: otherOrg, name: 'Theirs', slug: 'theirs' });
    expect(await failure(client(owner).workspaces.update({ id: foreign.id, name: 'Mine now' }))).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    expect(await failure(client(owner).workspaces.delete({ id: foreign.id }))).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    expect(await failure(client(owner).workspaces.list({ organizationId: otherOrg }))).toMatchObject({ status: 403 });
    expect(await failure(client(owner).workspaces.get({ organizationId: otherOrg, slug: 'theirs' }))).toMatchObject({ status: 403 });
    expect(await client(stranger).workspaces.get({ organizationId: otherOrg, slug: 'theirs' })).toMatchObject({ name: 'Theirs' });
  });

  it('answers LIMIT_REACHED past the plan while billing is configured', async () => {
    const billed = await addMembership(server.db, owner, 'owner');
    limited.add(billed);
    await client(owner).workspaces.create({ organizationId: billed, name: 'One', slug: 'one' });
    await client(owner).workspaces.create({ organizationId: billed, name: 'Two', slug: 'two' });
    const error = await failure(client(owner).workspaces.create({ organizationId: billed, name: 'Three', slug: 'three' }));
    expect(error).toMatchObject({ status: 403, code: 'LIMIT_REACHED', defined: true, data: { kind: 'workspaces', limit: 2, plan: 'free' } });
    const got = await client(owner).workspaces.get({ organizationId: billed, slug: 'one' });
    expect(got.storage).toEqual({ usedBytes: 0, limitBytes: 1024 });
  });

  it('should require access', async () => {
    expect(await failure(client().workspaces.list({ organizationId: org }))).toMatchObject({ status: 401 });
    expect(await failure(client(stranger).workspaces.create({ organizationId: org, name: 'x', slug: 'xx' }))).toMatchObject({ status: 403 });
  });
});

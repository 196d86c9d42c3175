/**
 * Plan quotas under bursts of concurrent calls: no limit is ever exceeded, and none refuses a call
 * that fits. With TEST_DATABASE_URL (`make test-pg`) the calls run as parallel transactions over the
 * app's pool on a real PostgreSQL server, where only the organization row lock keeps each count
 * true until commit: that is what these tests are for. On the embedded database (one connection)
 * the transactions take turns, so there they only check the arithmetic; they run anyway.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { externalDatabaseUrl } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { BURST_ENV, burst, clientFor, expectOnly, settablePlans, succeeded } from './support.ts';

const { plans, limits } = settablePlans();
let server: TestServer;
let owner: TestUser;

beforeAll(async () => {
  server = await startTestServer({ env: BURST_ENV, overrides: { plans, mailer: { send: async () => {} } } });
  if (externalDatabaseUrl) expect(server.db.kind).toBe('external');
  owner = await createUser(server.db);
});
afterAll(() => server?.close());

const api = () => clientFor(server, owner);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

async function organization(quota: Parameters<typeof limits.set>[1]): Promise<string> {
  const org = await addMembership(server.db, owner, 'owner');
  limits.set(org, quota);
  return org;
}

async function count(sql: string, org: string): Promise<number> {
  const [row] = await server.db.sql.unsafe<{ n: number }[]>(`${sql}`, [org]);
  return row!.n;
}
const workspaceCount = (org: string) => count('select count(*)::int as n from workspaces where organization_id = $1', org);
const storedBytes = (org: string) => count('select coalesce(sum(size), 0)::int as n from documents where organization_id = $1', org);

describe('workspaces per organization (workspaces.create)', () => {
  it('lets exactly the limit through when many creations race, in several organizations at once', async () => {
    const orgs = [
      { org: await organization({ workspaces: 3 }), limit: 3, existing: 0 },
      { org: await organization({ workspaces: 5 }), limit: 5, existing: 2 },
      { org: await organization({ workspaces: 8 }), limit: 8, existing: 0 },
    ];
    for (const { org, existing } of orgs) {
      for (const i of range(existing)) await api().workspaces.create({ organizationId: org, name: `Before ${i}`, slug: `before-${i}` });
    }
    // 30 creations per organization, interleaved across organizations.
    const calls = range(30).flatMap((i) =>
      orgs.map(
        ({ org }) =>
          () =>
            api().workspaces.create({ organizationId: org, name: `Burst ${i}`, slug: `burst-${i}` }),
      ),
    );
    const outcomes = await burst(calls);
    expectOnly(outcomes, ['LIMIT_REACHED']);
    for (const { org, limit, existing } of orgs) {
      const mine = outcomes.filter((_, index) => orgs[index % orgs.length]!.org === org);
      expect(succeeded(mine), org).toHaveLength(limit - existing);
      expect(await workspaceCount(org)).toBe(limit);
    }
  });

  it('gives a slug to exactly one of many concurrent creations; the others get 409', async () => {
    const org = await organization({});
    const outcomes = await burst(range(20).map((i) => () => api().workspaces.create({ organizationId: org, name: `Same ${i}`, slug: 'same' })));
    expectOnly(outcomes, ['CONFLICT']);
    expect(succeeded(outcomes)).toHaveLength(1);
    expect(await workspaceCount(org)).toBe(1);
  });
});

describe('storage bytes per organization (documents.createUpload, documents.complete)', () => {
  const input = (org: string, workspaceId: string, size: number) => ({ organizationId: org, workspaceId, name: 'burst.txt', contentType: 'text/plain' as const, size });

  async function billedWorkspace(storageBytes: number) {
    const org = await organization({ storageBytes });
    const workspace = await api().workspaces.create({ organizationId: org, name: 'Files', slug: 'files' });
    return { org, ws: workspace.id };
  }

  /** PUT `size` bytes through the presigned address (the local driver's /uploads route). */
  async function put(upload: { url: string; headers: Record<string, string> }, size: number): Promise<void> {
    const response = await fetch(upload.url, { method: 'PUT', headers: { ...upload.headers, 'content-length': String(size) }, body: Buffer.alloc(size, 'a') });
    expect(response.status, await response.text()).toBe(200);
  }

  it('never lets racing uploads declare more than the limit, and refuses only what does not fit', async () => {
    const { org, ws } = await billedWorkspace(1000);
    // Uneven sizes: which ones fit depends on the order they are served in.
    const sizes = range(36).map((i) => [60, 100, 170, 30][i % 4]!);
    const outcomes = await burst(sizes.map((size) => () => api().documents.createUpload(input(org, ws, size))));
    expectOnly(outcomes, ['LIMIT_REACHED']);
    const used = await storedBytes(org);
    expect(used).toBeLessThanOrEqual(1000);
    expect(used).toBe(succeeded(outcomes).reduce((sum, { document }) => sum + document.size, 0));
    // Usage only grew during the burst, so each refused size did not fit when it was refused and still does not.
    outcomes.forEach((outcome, index) => {
      if (!outcome.ok) expect(used + sizes[index]!).toBeGreaterThan(1000);
    });
  });

  it('counts exactly when completions and new uploads race (measured size equal to the declared one)', async () => {
    const { org, ws } = await billedWorkspace(1000);
    const pending = [];
    for (let i = 0; i < 4; i++) {
      const { document, upload } = await api().documents.createUpload(input(org, ws, 200));
      await put(upload, 200);
      pending.push(document);
    }
    // 800 of 1000 bytes declared: the completions change nothing, so exactly two 100-byte uploads fit.
    const completions = pending.map((document) => () => api().documents.complete({ id: document.id }));
    const uploads = range(12).map(() => () => api().documents.createUpload(input(org, ws, 100)));
    const outcomes = await burst<unknown>([...completions, ...uploads].sort(() => Math.random() - 0.5));
    expectOnly(outcomes, ['LIMIT_REACHED']);
    const docs = await server.db.sql<{ status: string; n: number }[]>`
      select status, count(*)::int as n from documents where organization_id = ${org} group by status order by status`;
    expect(docs).toEqual([
      { status: 'pending', n: 2 },
      { status: 'ready', n: 4 },
    ]);
    expect(await storedBytes(org)).toBe(1000);
  });

  it('stays within the limit when completions that free bytes race new uploads', async () => {
    const { org, ws } = await billedWorkspace(1000);
    const pending = [];
    // Declared 125 bytes each (the organization is full), but only 50 arrive: each completion frees 75.
    for (let i = 0; i < 8; i++) {
      const { document, upload } = await api().documents.createUpload(input(org, ws, 125));
      await put(upload, 50);
      pending.push(document);
    }
    const completions = pending.map((document) => () => api().documents.complete({ id: document.id }));
    const uploads = range(20).map(() => () => api().documents.createUpload(input(org, ws, 100)));
    const all = [...completions, ...uploads];
    const outcomes = await burst<unknown>(all);
    expectOnly(outcomes, ['LIMIT_REACHED']);
    // Completing never needs more room than the document already holds: all of them succeed.
    expect(outcomes.slice(0, completions.length).every((outcome) => outcome.ok)).toBe(true);
    const admitted = succeeded(outcomes.slice(completions.length)).length;
    expect(admitted).toBeLessThanOrEqual(6); // 8 x 75 bytes freed, 100 bytes each
    const used = await storedBytes(org);
    expect(used).toBe(8 * 50 + admitted * 100);
    expect(used).toBeLessThanOrEqual(1000);
    // The count stays exact afterwards: what remains can be declared, not a byte more.
    const remaining = 1000 - used;
    if (remaining > 0) await api().documents.createUpload(input(org, ws, remaining));
    await expect(api().documents.createUpload(input(org, ws, 1))).rejects.toMatchObject({ code: 'LIMIT_REACHED' });
  });
});

describe('members per organization (auth.organization.inviteMember)', () => {
  it('hands out exactly the free seats when many invitations race', async () => {
    const org = await organization({ members: 6 });
    await addMembership(server.db, await createUser(server.db), 'member', org);
    const outcomes = await Promise.all(
      range(20).map((i) =>
        server.fetch('/api/auth/organization/invite-member', {
          method: 'POST',
          headers: { ...owner.headers, 'content-type': 'application/json' },
          body: JSON.stringify({ organizationId: org, email: `seat-${i}-${org}@example.com`, role: 'member' }),
        }),
      ),
    );
    const statuses = outcomes.map((response) => response.status);
    expect(
      statuses.filter((status) => status === 200),
      JSON.stringify(statuses),
    ).toHaveLength(4); // 6 seats, 2 members
    expect(statuses.filter((status) => status !== 200).every((status) => status === 403)).toBe(true);
    for (const response of outcomes) if (response.status === 403) expect(await response.json()).toMatchObject({ code: 'LIMIT_REACHED', data: { kind: 'members', limit: 6 } });
    expect(await count(`select count(*)::int as n from invitations where organization_id = $1 and status = 'pending'`, org)).toBe(4);
  });
});

describe('members per organization (inviteMember and acceptInvitation racing)', () => {
  const post = (user: TestUser, path: string, body: unknown) =>
    server.fetch(`/api/auth/organization/${path}`, { method: 'POST', headers: { ...user.headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('acceptances keep their seat and new invitations get only the free ones; members and pending invitations never pass the limit', async () => {
    const org = await organization({ members: 7 });
    await addMembership(server.db, await createUser(server.db), 'member', org);
    // 2 members and 4 pending invitations: 6 of 7 seats.
    const invitees = await Promise.all(range(4).map((i) => createUser(server.db, { email: `accept-${i}-${org}@example.com` })));
    const invitations: string[] = [];
    for (const invitee of invitees) {
      const response = await post(owner, 'invite-member', { organizationId: org, email: invitee.email, role: 'member' });
      expect(response.status).toBe(200);
      invitations.push((await response.json()).id);
    }
    const accepts = invitees.map((invitee, i) => () => post(invitee, 'accept-invitation', { invitationId: invitations[i] }));
    const invites = range(12).map((i) => () => post(owner, 'invite-member', { organizationId: org, email: `late-${i}-${org}@example.com`, role: 'member' }));
    const responses = await Promise.all([...accepts, ...invites].sort(() => Math.random() - 0.5).map((call) => call()));
    const statuses = responses.map((response) => response.status);
    expect(
      statuses.every((status) => status === 200 || status === 403),
      JSON.stringify(statuses),
    ).toBe(true);
    for (const response of responses) if (response.status === 403) expect(await response.json()).toMatchObject({ code: 'LIMIT_REACHED', data: { kind: 'members', limit: 7 } });
    expect(await count('select count(*)::int as n from members where organization_id = $1', org)).toBe(6); // every acceptance went through
    expect(await count(`select count(*)::int as n from invitations where organization_id = $1 and status = 'pending'`, org)).toBe(1); // one free seat
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
  });

  it('refuses every acceptance while a smaller limit is already taken by members and other invitations', async () => {
    const org = await organization({ members: 10 });
    const invitees = await Promise.all(range(5).map((i) => createUser(server.db, { email: `shrunk-${i}-${org}@example.com` })));
    const invitations: string[] = [];
    for (const invitee of invitees) invitations.push((await (await post(owner, 'invite-member', { organizationId: org, email: invitee.email, role: 'member' })).json()).id);
    // Moved to a plan of 4 seats: 1 member and 5 invitations already hold 6.
    limits.set(org, { members: 4 });
    const responses = await Promise.all(invitees.map((invitee, i) => post(invitee, 'accept-invitation', { invitationId: invitations[i] })));
    // Each acceptance needs 1 member + 4 other invitations + itself = 6 > 4: none fits, whatever the order.
    expect(responses.map((response) => response.status)).toEqual([403, 403, 403, 403, 403]);
    expect(await count('select count(*)::int as n from members where organization_id = $1', org)).toBe(1);
  });
});

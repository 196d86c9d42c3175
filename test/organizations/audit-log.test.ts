/**
 * organizations.auditLog on the real stack: newest first, signed cursor paging across pages, a
 * foreign or forged cursor 400, owners and admins only (member 403), and entries of real audited
 * actions (an impersonated one included) with actor, impersonator and metadata.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import { writeAudit } from '../../src/audit/store.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

let server: TestServer;
let owner: TestUser, orgAdmin: TestUser, member: TestUser, platformAdmin: TestUser;
let org: string, otherOrg: string;
beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000' }, aiService: false });
  [owner, orgAdmin, member, platformAdmin] = await Promise.all([createUser(server.db), createUser(server.db), createUser(server.db), createUser(server.db, { role: 'admin' })]);
  org = await addMembership(server.db, owner, 'owner');
  await addMembership(server.db, orgAdmin, 'admin', org);
  await addMembership(server.db, member, 'member', org);
  otherOrg = await addMembership(server.db, owner, 'owner');
});
afterAll(() => server.close());

const client = (user: TestUser) => createClient({ baseUrl: server.origin, token: user.token, fetch: clientFetch(server) });
const auditLog = (user: TestUser, organizationId: string, query = '') => server.fetch(`/api/v1/organizations/${organizationId}/audit-log${query}`, { headers: user.headers });

describe('organizations.auditLog', () => {
  it('shows real audited actions with actor, impersonator and metadata', async () => {
    // A team created by the owner, then one created by the platform admin impersonating the owner.
    const created = await server.fetch('/api/auth/organization/create-team', {
      method: 'POST',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ organizationId: org, name: 'Research' }),
    });
    expect(created.status).toBe(200);
    const impersonation = await server.fetch('/api/auth/admin/impersonate-user', {
      method: 'POST',
      headers: { ...platformAdmin.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ userId: owner.id }),
    });
    expect(impersonation.status).toBe(200);
    const token = impersonation.headers.get('set-auth-token')!;
    const impersonated = await server.fetch('/api/auth/organization/create-team', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ organizationId: org, name: 'Support' }),
    });
    expect(impersonated.status).toBe(200);

    const { entries } = await client(owner).organizations.auditLog({ organizationId: org, limit: 2 });
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatchObject({
      organizationId: org,
      action: 'team.created',
      actorId: owner.id,
      actorEmail: owner.email,
      targetType: 'team',
      impersonatedBy: platformAdmin.id,
      metadata: { name: 'Support' },
    });
    expect(entries[1]).toMatchObject({ action: 'team.created', actorId: owner.id, impersonatedBy: null, metadata: { name: 'Research' } });
    expect(entries[0]!.createdAt).toBeInstanceOf(Date);
    // Platform-level entries (the impersonation itself) never show in an organization's log.
    const all = await client(owner).organizations.auditLog({ organizationId: org, limit: 100 });
    expect(all.entries.map((entry) => entry.action)).not.toContain('user.impersonation_started');
  });

  it('pages newest first across pages with the cursor, entries of the same instant ordered by id', async () => {
    const base = Date.parse('2030-01-01T00:00:00.000Z');
    // 7 entries, two of them at the same instant: (created_at, id) decides between them.
    for (let i = 0; i < 7; i++) {
      await writeAudit(server.db.sql, { organizationId: otherOrg, action: 'test.entry', actor: null, metadata: { i } }, new Date(base + Math.min(i, 5) * 1000));
    }
    const seen: unknown[] = [];
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const page = await client(owner).organizations.auditLog({ organizationId: otherOrg, limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...page.entries);
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    const entries = seen as { id: string; createdAt: Date; metadata: { i: number } | null; actorId: string | null }[];
    expect(entries).toHaveLength(7);
    expect(new Set(entries.map((entry) => entry.id)).size).toBe(7);
    for (let i = 1; i < entries.length; i++) {
      const [a, b] = [entries[i - 1]!, entries[i]!];
      expect(a.createdAt.getTime() > b.createdAt.getTime() || (a.createdAt.getTime() === b.createdAt.getTime() && a.id > b.id)).toBe(true);
    }
    expect(entries.map((entry) => entry.metadata!.i).slice(2)).toEqual([4, 3, 2, 1, 0]);
    expect(entries[0]).toMatchObject({ actorId: null, actorEmail: null, targetType: null, targetId: null, impersonatedBy: null });

    // A page that ends exactly at the last entry says so.
    const exact = await client(owner).organizations.auditLog({ organizationId: otherOrg, limit: 7 });
    expect(exact.nextCursor).toBeNull();
  });

  it('answers 400 for a cursor of another organization, a forged one or none of the service', async () => {
    const page = await client(owner).organizations.auditLog({ organizationId: otherOrg, limit: 1 });
    expect(page.nextCursor).toEqual(expect.any(String));
    const foreign = await auditLog(owner, org, `?cursor=${encodeURIComponent(page.nextCursor!)}`);
    expect(foreign.status).toBe(400);
    expect(await foreign.json()).toMatchObject({ code: 'BAD_REQUEST', data: { issues: [{ path: ['cursor'] }] } });
    // The same position with a forged signature.
    const forged = page.nextCursor!.replace(/\.[^.]*$/, '.forged');
    expect((await auditLog(owner, otherOrg, `?cursor=${encodeURIComponent(forged)}`)).status).toBe(400);
    expect((await auditLog(owner, otherOrg, '?cursor=not-a-cursor')).status).toBe(400);
    expect((await auditLog(owner, otherOrg, '?limit=0')).status).toBe(400);
    expect((await auditLog(owner, otherOrg, '?limit=101')).status).toBe(400);
  });

  it('owners and admins read it; members, non-members and platform admins get 403', async () => {
    expect((await auditLog(owner, org)).status).toBe(200);
    expect((await auditLog(orgAdmin, org)).status).toBe(200);
    for (const user of [member, platformAdmin]) {
      const response = await auditLog(user, org);
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'FORBIDDEN' });
    }
    expect((await auditLog(orgAdmin, otherOrg)).status).toBe(403);
  });
});

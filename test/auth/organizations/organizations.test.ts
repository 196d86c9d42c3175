import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession } from '../../../src/auth/sessions.ts';
import { newId } from '../../../src/ids.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { addMembership, createUser } from '../../support/users.ts';
import { auditOf, get, orgWithRoles, post, TEST_ENV } from './fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: TEST_ENV });
});
afterAll(() => server.close());

const uniqueSlug = () => `acme-${newId('x').slice(2, 12)}`;

describe('auth.organization.create', () => {
  it('creates the organization with the caller as its only owner, audited', async () => {
    const ada = await createUser(server.db, { name: 'Ada Lovelace' });
    const slug = uniqueSlug();
    const response = await post(server, 'create', ada, { name: 'Acme Corp', slug });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toMatchObject({ name: 'Acme Corp', slug, logo: null, metadata: null });
    expect(body.id).toMatch(/^org_/);
    expect(body.members).toEqual([expect.objectContaining({ organizationId: body.id, userId: ada.id, role: 'owner', user: { id: ada.id, email: ada.email, name: 'Ada Lovelace', image: null } })]);
    const audit = await auditOf(server, { organizationId: body.id });
    expect(audit).toEqual([
      expect.objectContaining({ action: 'member.added', actor_id: ada.id, actor_email: ada.email, target_type: 'member', target_id: body.members[0].id, metadata: { userId: ada.id, role: 'owner' } }),
      expect.objectContaining({ action: 'organization.created', actor_id: ada.id, target_type: 'organization', target_id: body.id, metadata: { name: 'Acme Corp', slug }, impersonated_by: null }),
    ]);
  });

  it('answers 409 when the slug is taken, and creates nothing', async () => {
    const ada = await createUser(server.db);
    const slug = uniqueSlug();
    expect((await post(server, 'create', ada, { name: 'First', slug })).status).toBe(200);
    const response = await post(server, 'create', ada, { name: 'Second', slug });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ defined: true, code: 'CONFLICT' });
    expect(await server.db.sql`select 1 from organizations where slug = ${slug}`).toHaveLength(1);
    expect(await server.db.sql`select 1 from audit_log where metadata->>'name' = 'Second'`).toHaveLength(0);
  });

  it.each([
    ['an upper-case slug', { name: 'Acme', slug: 'Acme' }],
    ['a trailing hyphen', { name: 'Acme', slug: 'acme-' }],
    ['a name with a line break', { name: 'Acme\nCorp', slug: 'acme-nl' }],
    ['no name', { slug: 'acme-x' }],
  ])('answers 400 for %s', async (_label, body) => {
    const ada = await createUser(server.db);
    expect((await post(server, 'create', ada, body)).status).toBe(400);
  });

  it('answers 401 without a session', async () => {
    expect((await post(server, 'create', null, { name: 'Acme', slug: uniqueSlug() })).status).toBe(401);
  });

  it('records the impersonating admin on the audit entries', async () => {
    const admin = await createUser(server.db, { role: 'admin' });
    const ada = await createUser(server.db);
    const { token } = await createSession(server.db.sql, { userId: ada.id, now: new Date(), impersonatedBy: admin.id });
    const response = await server.fetch('/api/auth/organization/create', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Acme', slug: uniqueSlug() }),
    });
    expect(response.status).toBe(200);
    const audit = await auditOf(server, { organizationId: (await response.json()).id });
    expect(audit.map((entry) => [entry.actor_id, entry.impersonated_by])).toEqual([
      [ada.id, admin.id],
      [ada.id, admin.id],
    ]);
  });
});

describe('auth.organization.update', () => {
  it('changes the given fields and audits them with before and after', async () => {
    const { orgId, slug, admin } = await orgWithRoles(server);
    const newSlug = uniqueSlug();
    const response = await post(server, 'update', admin, {
      organizationId: orgId,
      data: { name: 'Acme Corporation', slug: newSlug, logo: 'https://acme.example.com/logo.png', metadata: { industry: 'aerospace' } },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: orgId, name: 'Acme Corporation', slug: newSlug, logo: 'https://acme.example.com/logo.png', metadata: { industry: 'aerospace' } });
    const [entry] = (await auditOf(server, { organizationId: orgId })).filter((row) => row.action === 'organization.updated');
    expect(entry).toMatchObject({
      actor_id: admin.id,
      target_type: 'organization',
      target_id: orgId,
      metadata: {
        changes: {
          name: { from: `Org ${orgId}`, to: 'Acme Corporation' },
          slug: { from: slug, to: newSlug },
          logo: { from: null, to: 'https://acme.example.com/logo.png' },
          metadata: { from: null, to: { industry: 'aerospace' } },
        },
      },
    });
  });

  it('clears logo and metadata with null, and audits only what changed', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    await post(server, 'update', owner, { organizationId: orgId, data: { logo: 'https://acme.example.com/a.png', metadata: { a: 1 } } });
    const response = await post(server, 'update', owner, { organizationId: orgId, data: { name: `Org ${orgId}`, logo: null, metadata: null } });
    expect(await response.json()).toMatchObject({ logo: null, metadata: null });
    const updates = (await auditOf(server, { organizationId: orgId })).filter((row) => row.action === 'organization.updated');
    expect(updates.map((row) => Object.keys(row.metadata!.changes).sort())).toEqual([
      ['logo', 'metadata'],
      ['logo', 'metadata'],
    ]);
  });

  it('changes nothing for an empty data, and writes no audit entry', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const response = await post(server, 'update', owner, { organizationId: orgId, data: {} });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: orgId, name: `Org ${orgId}` });
    expect((await auditOf(server, { organizationId: orgId })).filter((row) => row.action === 'organization.updated')).toEqual([]);
  });

  it('answers 409 for a slug another organization uses', async () => {
    const first = await orgWithRoles(server);
    const second = await orgWithRoles(server);
    const response = await post(server, 'update', second.owner, { organizationId: second.orgId, data: { slug: first.slug } });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: 'CONFLICT', defined: true });
  });

  it('answers 400 for an unknown field in data', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    expect((await post(server, 'update', owner, { organizationId: orgId, data: { paymentCustomerId: 'cus_1' } })).status).toBe(400);
  });
});

describe('auth.organization.delete', () => {
  it('answers 404 when confirmSlug differs, and deletes nothing', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const response = await post(server, 'delete', owner, { organizationId: orgId, confirmSlug: 'not-the-slug' });
    expect(response.status).toBe(404);
    expect(await server.db.sql`select 1 from organizations where id = ${orgId}`).toHaveLength(1);
  });

  it.each(['active', 'trialing', 'past_due', 'unpaid', 'paused'])('answers 412 while a subscription is %s', async (status) => {
    const { orgId, slug, owner } = await orgWithRoles(server);
    await server.db.sql`insert into subscriptions (id, organization_id, plan, status) values (${newId('sub')}, ${orgId}, 'pro', ${status})`;
    const response = await post(server, 'delete', owner, { organizationId: orgId, confirmSlug: slug });
    expect(response.status).toBe(412);
    expect(await response.json()).toMatchObject({ code: 'PRECONDITION_FAILED', defined: true });
    expect(await server.db.sql`select 1 from organizations where id = ${orgId}`).toHaveLength(1);
  });

  it('deletes everything the organization owns and keeps a platform-level audit entry', async () => {
    const { orgId, slug, owner, member } = await orgWithRoles(server);
    await server.db.sql`insert into subscriptions (id, organization_id, plan, status) values (${newId('sub')}, ${orgId}, 'pro', 'canceled')`;
    const teamId = newId('team');
    await server.db.sql`insert into teams (id, organization_id, name) values (${teamId}, ${orgId}, 'Research')`;
    await server.db.sql`insert into team_members (id, team_id, user_id) values (${newId('tm')}, ${teamId}, ${member.id})`;
    await server.db.sql`insert into invitations (id, organization_id, email, role, expires_at) values (${newId('inv')}, ${orgId}, 'x@example.com', 'member', now() + interval '1 day')`;
    await server.db.sql`insert into workspaces (id, organization_id, team_id, name, slug) values (${newId('ws')}, ${orgId}, ${teamId}, 'Notes', 'notes')`;
    await post(server, 'update', owner, { organizationId: orgId, data: { name: 'Doomed' } }); // an organization-level audit entry

    const response = await post(server, 'delete', owner, { organizationId: orgId, confirmSlug: slug });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ organizationId: orgId });
    for (const table of ['organizations', 'members', 'teams', 'invitations', 'subscriptions', 'workspaces']) {
      const column = table === 'organizations' ? 'id' : 'organization_id';
      expect(await server.db.sql`select 1 from ${server.db.sql(table)} where ${server.db.sql(column)} = ${orgId}`, table).toHaveLength(0);
    }
    expect(await server.db.sql`select 1 from team_members where team_id = ${teamId}`).toHaveLength(0);
    expect(await auditOf(server, { organizationId: orgId })).toEqual([]);
    expect(await auditOf(server, { targetId: orgId })).toEqual([
      {
        organization_id: null,
        action: 'organization.deleted',
        actor_id: owner.id,
        actor_email: owner.email,
        target_type: 'organization',
        target_id: orgId,
        impersonated_by: null,
        metadata: { name: 'Doomed', slug },
      },
    ]);
  });
});

describe('auth.organization.list', () => {
  it("answers the caller's organizations with their role, oldest membership first", async () => {
    const ada = await createUser(server.db);
    const first = await orgWithRoles(server);
    const second = await orgWithRoles(server);
    await addMembership(server.db, ada, 'member', second.orgId);
    await addMembership(server.db, ada, 'admin', first.orgId);
    await server.db.sql`update members set created_at = now() - interval '1 hour' where user_id = ${ada.id} and organization_id = ${second.orgId}`;
    const response = await get(server, 'list', ada);
    expect(response.status).toBe(200);
    expect((await response.json()).map((org: any) => [org.id, org.role])).toEqual([
      [second.orgId, 'member'],
      [first.orgId, 'admin'],
    ]);
    expect(await (await get(server, 'list', await createUser(server.db))).json()).toEqual([]);
  });

  it('answers 401 without a session', async () => {
    expect((await get(server, 'list', null)).status).toBe(401);
  });
});

describe('auth.organization.getFullOrganization', () => {
  it('answers members, pending invitations (newest first) and teams', async () => {
    const { orgId, owner, admin, member } = await orgWithRoles(server);
    const older = newId('inv');
    const newer = newId('inv');
    await server.db.sql`insert into invitations (id, organization_id, email, role, expires_at, created_at) values
      (${older}, ${orgId}, 'a@example.com', 'member', now() + interval '1 day', now() - interval '2 hours'),
      (${newer}, ${orgId}, 'b@example.com', 'admin', now() + interval '1 day', now() - interval '1 hour'),
      (${newId('inv')}, ${orgId}, 'c@example.com', 'member', now() + interval '1 day', now())`;
    await server.db.sql`update invitations set status = 'accepted' where email = 'c@example.com' and organization_id = ${orgId}`;
    const teamId = newId('team');
    await server.db.sql`insert into teams (id, organization_id, name) values (${teamId}, ${orgId}, 'Research')`;
    const response = await get(server, 'get-full-organization', member, { organizationId: orgId });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.id).toBe(orgId);
    expect(body.members.map((m: any) => [m.userId, m.role])).toEqual([
      [owner.id, 'owner'],
      [admin.id, 'admin'],
      [member.id, 'member'],
    ]);
    expect(body.members[0].user).toEqual({ id: owner.id, email: owner.email, name: 'Olive Owner', image: null });
    expect(body.invitations.map((i: any) => i.id)).toEqual([newer, older]);
    expect(body.teams).toEqual([expect.objectContaining({ id: teamId, name: 'Research', organizationId: orgId })]);
  });
});

describe('auth.organization.listMembers', () => {
  it('pages members oldest first with the total', async () => {
    const { orgId, owner, admin, member } = await orgWithRoles(server);
    const extra = await createUser(server.db);
    await addMembership(server.db, extra, 'member', orgId);
    const page = await (await get(server, 'list-members', member, { organizationId: orgId, limit: 2, offset: 1 })).json();
    expect(page.total).toBe(4);
    expect(page.members.map((m: any) => m.userId)).toEqual([admin.id, member.id]);
    const all = await (await get(server, 'list-members', member, { organizationId: orgId })).json();
    expect(all.members.map((m: any) => m.userId)).toEqual([owner.id, admin.id, member.id, extra.id]);
  });

  it('answers 400 for a limit above 100', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    expect((await get(server, 'list-members', owner, { organizationId: orgId, limit: 101 })).status).toBe(400);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { addMembership, createUser, type TestUser } from '../../support/users.ts';
import { auditOf, memberId, orgWithRoles, post, TEST_ENV } from './fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: TEST_ENV });
});
afterAll(() => server.close());

async function teamWith(orgId: string, ...users: TestUser[]): Promise<string> {
  const teamId = newId('team');
  await server.db.sql`insert into teams (id, organization_id, name) values (${teamId}, ${orgId}, 'Research')`;
  for (const user of users) await server.db.sql`insert into team_members (id, team_id, user_id) values (${newId('tm')}, ${teamId}, ${user.id})`;
  return teamId;
}

async function rolesOf(orgId: string): Promise<Record<string, string>> {
  const rows = await server.db.sql<{ user_id: string; role: string }[]>`select user_id, role from members where organization_id = ${orgId}`;
  return Object.fromEntries(rows.map((row) => [row.user_id, row.role]));
}

describe('auth.organization.removeMember', () => {
  it('removes a member by id, with their team memberships in this organization only, audited', async () => {
    const { orgId, admin, member } = await orgWithRoles(server);
    const other = await orgWithRoles(server);
    await addMembership(server.db, member, 'member', other.orgId);
    const team = await teamWith(orgId, member, admin);
    const otherTeam = await teamWith(other.orgId, member);
    const id = await memberId(server, orgId, member);

    const response = await post(server, 'remove-member', admin, { organizationId: orgId, memberIdOrEmail: id });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ member: expect.objectContaining({ id, userId: member.id, role: 'member', organizationId: orgId }) });
    expect((await rolesOf(orgId))[member.id]).toBeUndefined();
    expect(await server.db.sql`select user_id from team_members where team_id = ${team}`).toEqual([{ user_id: admin.id }]);
    expect(await server.db.sql`select user_id from team_members where team_id = ${otherTeam}`).toEqual([{ user_id: member.id }]);
    expect((await auditOf(server, { organizationId: orgId })).filter((row) => row.action === 'member.removed')).toEqual([
      expect.objectContaining({ actor_id: admin.id, target_type: 'member', target_id: id, metadata: { userId: member.id, email: member.email, role: 'member' } }),
    ]);
  });

  it('finds the member by email, case aside', async () => {
    const { orgId, owner, member } = await orgWithRoles(server);
    const response = await post(server, 'remove-member', owner, { organizationId: orgId, memberIdOrEmail: member.email.toUpperCase() });
    expect(response.status).toBe(200);
    expect((await response.json()).member.userId).toBe(member.id);
  });

  it('answers 404 when no member matches (a member of another organization included)', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const other = await orgWithRoles(server);
    for (const key of ['mem_aaaaaaaaaaaaaaaaaaaaaaaa', other.member.email, await memberId(server, other.orgId, other.member)]) {
      const response = await post(server, 'remove-member', owner, { organizationId: orgId, memberIdOrEmail: key });
      expect(response.status, key).toBe(404);
    }
  });

  it('answers 409 for the last owner, and an owner may remove another owner', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const last = await post(server, 'remove-member', owner, { organizationId: orgId, memberIdOrEmail: await memberId(server, orgId, owner) });
    expect(last.status).toBe(409);
    expect(await last.json()).toMatchObject({ code: 'CONFLICT', defined: true });
    const second = await createUser(server.db);
    await addMembership(server.db, second, 'owner', orgId);
    expect((await post(server, 'remove-member', owner, { organizationId: orgId, memberIdOrEmail: second.email })).status).toBe(200);
  });
});

describe('auth.organization.updateMemberRole', () => {
  it('changes the role and audits from and to', async () => {
    const { orgId, admin, member } = await orgWithRoles(server);
    const id = await memberId(server, orgId, member);
    const response = await post(server, 'update-member-role', admin, { organizationId: orgId, memberId: id, role: 'admin' });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id, userId: member.id, role: 'admin', user: { id: member.id, email: member.email } });
    expect((await rolesOf(orgId))[member.id]).toBe('admin');
    expect((await auditOf(server, { organizationId: orgId })).filter((row) => row.action === 'member.role_changed')).toEqual([
      expect.objectContaining({ actor_id: admin.id, target_id: id, metadata: { userId: member.id, from: 'member', to: 'admin' } }),
    ]);
  });

  it('answers the member unchanged, without an audit entry, when the role is the same', async () => {
    const { orgId, owner, member } = await orgWithRoles(server);
    const response = await post(server, 'update-member-role', owner, { organizationId: orgId, memberId: await memberId(server, orgId, member), role: 'member' });
    expect(response.status).toBe(200);
    expect((await auditOf(server, { organizationId: orgId })).filter((row) => row.action === 'member.role_changed')).toEqual([]);
  });

  it('answers 404 for a membership of another organization', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const other = await orgWithRoles(server);
    const response = await post(server, 'update-member-role', owner, { organizationId: orgId, memberId: await memberId(server, other.orgId, other.member), role: 'admin' });
    expect(response.status).toBe(404);
    expect((await rolesOf(other.orgId))[other.member.id]).toBe('member');
  });

  it('answers 409 when the last owner would be demoted; with two owners an owner may step down', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const own = await memberId(server, orgId, owner);
    const refused = await post(server, 'update-member-role', owner, { organizationId: orgId, memberId: own, role: 'admin' });
    expect(refused.status).toBe(409);
    const second = await createUser(server.db);
    await addMembership(server.db, second, 'owner', orgId);
    expect((await post(server, 'update-member-role', owner, { organizationId: orgId, memberId: own, role: 'admin' })).status).toBe(200);
    expect(await rolesOf(orgId)).toMatchObject({ [owner.id]: 'admin', [second.id]: 'owner' });
  });

  it('answers 400 for an unknown role', async () => {
    const { orgId, owner, member } = await orgWithRoles(server);
    expect((await post(server, 'update-member-role', owner, { organizationId: orgId, memberId: await memberId(server, orgId, member), role: 'superuser' })).status).toBe(400);
  });
});

describe('auth.organization.leave', () => {
  it("ends the caller's membership and their team memberships there, audited", async () => {
    const { orgId, member, admin } = await orgWithRoles(server);
    const team = await teamWith(orgId, member, admin);
    const response = await post(server, 'leave', member, { organizationId: orgId });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ userId: member.id, role: 'member', organizationId: orgId });
    expect((await rolesOf(orgId))[member.id]).toBeUndefined();
    expect(await server.db.sql`select user_id from team_members where team_id = ${team}`).toEqual([{ user_id: admin.id }]);
    expect((await auditOf(server, { organizationId: orgId })).filter((row) => row.action === 'member.left')).toEqual([
      expect.objectContaining({ actor_id: member.id, target_type: 'member', metadata: { userId: member.id, role: 'member' } }),
    ]);
  });

  it('answers 409 for the sole owner; an owner with a co-owner may leave', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    expect((await post(server, 'leave', owner, { organizationId: orgId })).status).toBe(409);
    const second = await createUser(server.db);
    await addMembership(server.db, second, 'owner', orgId);
    expect((await post(server, 'leave', owner, { organizationId: orgId })).status).toBe(200);
  });

  it('answers 403 to a non-member', async () => {
    const { orgId, outsider } = await orgWithRoles(server);
    expect((await post(server, 'leave', outsider, { organizationId: orgId })).status).toBe(403);
  });
});

describe('the last-owner guard under concurrency', () => {
  async function twoOwners() {
    const { orgId, owner } = await orgWithRoles(server);
    const second = await createUser(server.db);
    await addMembership(server.db, second, 'owner', orgId);
    return { orgId, a: owner, b: second, aId: await memberId(server, orgId, owner), bId: await memberId(server, orgId, second) };
  }
  const owners = async (orgId: string) => Object.values(await rolesOf(orgId)).filter((role) => role === 'owner').length;

  it('two owners demoting each other at once: exactly one succeeds, one owner remains', async () => {
    for (let round = 0; round < 5; round++) {
      const { orgId, a, b, aId, bId } = await twoOwners();
      const statuses = (
        await Promise.all([
          post(server, 'update-member-role', a, { organizationId: orgId, memberId: bId, role: 'member' }),
          post(server, 'update-member-role', b, { organizationId: orgId, memberId: aId, role: 'member' }),
        ])
      )
        .map((response) => response.status)
        .sort();
      // The loser is no longer an owner when its turn comes: 403 (only owners act on owners).
      expect(statuses).toEqual([200, 403]);
      expect(await owners(orgId)).toBe(1);
    }
  });

  it('two owners stepping down, leaving or removing each other at once: exactly one succeeds', async () => {
    const races = [
      (s: Awaited<ReturnType<typeof twoOwners>>) => [
        post(server, 'update-member-role', s.a, { organizationId: s.orgId, memberId: s.aId, role: 'admin' }),
        post(server, 'update-member-role', s.b, { organizationId: s.orgId, memberId: s.bId, role: 'admin' }),
      ],
      (s: Awaited<ReturnType<typeof twoOwners>>) => [post(server, 'leave', s.a, { organizationId: s.orgId }), post(server, 'leave', s.b, { organizationId: s.orgId })],
      (s: Awaited<ReturnType<typeof twoOwners>>) => [
        post(server, 'remove-member', s.a, { organizationId: s.orgId, memberIdOrEmail: s.bId }),
        post(server, 'remove-member', s.b, { organizationId: s.orgId, memberIdOrEmail: s.aId }),
      ],
    ];
    for (const race of races) {
      for (let round = 0; round < 3; round++) {
        const s = await twoOwners();
        const statuses = (await Promise.all(race(s))).map((response) => response.status);
        expect(statuses.filter((status) => status === 200)).toHaveLength(1);
        expect(statuses.filter((status) => status !== 200)[0]).toBeOneOf([403, 409]);
        expect(await owners(s.orgId)).toBe(1);
      }
    }
  });
});

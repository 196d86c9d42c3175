import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { addMembership } from '../../support/users.ts';
import { auditOf, get, orgWithRoles, post, TEST_ENV } from './fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: TEST_ENV });
});
afterAll(() => server.close());

async function orgWithTeam() {
  const org = await orgWithRoles(server);
  const team = await (await post(server, 'create-team', org.admin, { organizationId: org.orgId, name: 'Research' })).json();
  return { ...org, team };
}

describe('auth.organization.createTeam', () => {
  it('creates a team, audited', async () => {
    const { orgId, admin } = await orgWithRoles(server);
    const response = await post(server, 'create-team', admin, { organizationId: orgId, name: 'Research' });
    expect(response.status).toBe(200);
    const team = await response.json();
    expect(team).toEqual({ id: expect.stringMatching(/^team_/), organizationId: orgId, name: 'Research', createdAt: expect.any(String), updatedAt: team.createdAt });
    expect(await auditOf(server, { targetId: team.id })).toEqual([
      expect.objectContaining({ organization_id: orgId, action: 'team.created', actor_id: admin.id, target_type: 'team', metadata: { name: 'Research' } }),
    ]);
  });

  it('answers 400 for a name with a line break', async () => {
    const { orgId, admin } = await orgWithRoles(server);
    expect((await post(server, 'create-team', admin, { organizationId: orgId, name: 'Re\nsearch' })).status).toBe(400);
  });
});

describe('auth.organization.updateTeam', () => {
  it('renames the team, audited with the old and new name', async () => {
    const { owner, team } = await orgWithTeam();
    const response = await post(server, 'update-team', owner, { teamId: team.id, data: { name: 'R&D' } });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: team.id, name: 'R&D' });
    expect((await auditOf(server, { targetId: team.id })).find((row) => row.action === 'team.updated')).toMatchObject({ actor_id: owner.id, metadata: { from: 'Research', to: 'R&D' } });
  });

  it('answers 404 for an unknown team and 403 for a team of another organization', async () => {
    const { team } = await orgWithTeam();
    const other = await orgWithRoles(server);
    expect((await post(server, 'update-team', other.owner, { teamId: 'team_aaaaaaaaaaaaaaaaaaaaaaaa', data: { name: 'X' } })).status).toBe(404);
    expect((await post(server, 'update-team', other.owner, { teamId: team.id, data: { name: 'X' } })).status).toBe(403);
  });
});

describe('auth.organization.removeTeam', () => {
  it('deletes the team and its memberships; workspaces and invitations stay without a team; audited', async () => {
    const { orgId, owner, member, team } = await orgWithTeam();
    await post(server, 'add-team-member', owner, { teamId: team.id, userId: member.id });
    const workspaceId = newId('ws');
    await server.db.sql`insert into workspaces (id, organization_id, team_id, name, slug) values (${workspaceId}, ${orgId}, ${team.id}, 'Notes', 'notes')`;
    const invitationId = newId('inv');
    await server.db.sql`insert into invitations (id, organization_id, email, role, team_id, expires_at) values (${invitationId}, ${orgId}, 'x@example.com', 'member', ${team.id}, now() + interval '1 day')`;

    const response = await post(server, 'remove-team', owner, { organizationId: orgId, teamId: team.id });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: team.id });
    expect(await server.db.sql`select 1 from teams where id = ${team.id}`).toHaveLength(0);
    expect(await server.db.sql`select 1 from team_members where team_id = ${team.id}`).toHaveLength(0);
    expect(await server.db.sql`select team_id from workspaces where id = ${workspaceId}`).toEqual([{ team_id: null }]);
    expect(await server.db.sql`select team_id from invitations where id = ${invitationId}`).toEqual([{ team_id: null }]);
    expect((await auditOf(server, { targetId: team.id })).find((row) => row.action === 'team.deleted')).toMatchObject({ organization_id: orgId, actor_id: owner.id, metadata: { name: 'Research' } });
  });

  it("answers 403 for a team of another organization (the row's organization decides), and leaves it alone", async () => {
    const { team } = await orgWithTeam();
    const other = await orgWithRoles(server);
    expect((await post(server, 'remove-team', other.owner, { organizationId: other.orgId, teamId: team.id })).status).toBe(403);
    expect(await server.db.sql`select 1 from teams where id = ${team.id}`).toHaveLength(1);
  });

  it('answers 404 when the team is not in the organization named, even to an owner of both', async () => {
    const { team, owner } = await orgWithTeam();
    const secondOrg = await addMembership(server.db, owner, 'owner');
    expect((await post(server, 'remove-team', owner, { organizationId: secondOrg, teamId: team.id })).status).toBe(404);
    expect(await server.db.sql`select 1 from teams where id = ${team.id}`).toHaveLength(1);
  });
});

describe('auth.organization.listTeams', () => {
  it('answers every team of the organization, oldest first', async () => {
    const { orgId, owner, member, team } = await orgWithTeam();
    const later = await (await post(server, 'create-team', owner, { organizationId: orgId, name: 'Design' })).json();
    await server.db.sql`update teams set created_at = now() - interval '1 hour' where id = ${team.id}`;
    await orgWithTeam(); // another organization's team is not listed
    const response = await get(server, 'list-teams', member, { organizationId: orgId });
    expect(response.status).toBe(200);
    expect((await response.json()).map((t: any) => t.id)).toEqual([team.id, later.id]);
  });
});

describe('auth.organization.addTeamMember', () => {
  it('adds a member of the organization to the team, audited', async () => {
    const { admin, member, team, orgId } = await orgWithTeam();
    const response = await post(server, 'add-team-member', admin, { teamId: team.id, userId: member.id });
    expect(response.status).toBe(200);
    const added = await response.json();
    expect(added).toEqual({ id: expect.stringMatching(/^tm_/), teamId: team.id, userId: member.id, createdAt: expect.any(String) });
    expect((await auditOf(server, { targetId: team.id })).find((row) => row.action === 'team.member_added')).toMatchObject({
      organization_id: orgId,
      actor_id: admin.id,
      metadata: { userId: member.id, teamMemberId: added.id },
    });
  });

  it('answers 409 when the user is already in the team', async () => {
    const { admin, member, team } = await orgWithTeam();
    await post(server, 'add-team-member', admin, { teamId: team.id, userId: member.id });
    const response = await post(server, 'add-team-member', admin, { teamId: team.id, userId: member.id });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: 'CONFLICT', defined: true });
  });

  it('answers 404 for a user who is not a member of the organization, and for an unknown team', async () => {
    const { admin, outsider, team } = await orgWithTeam();
    expect((await post(server, 'add-team-member', admin, { teamId: team.id, userId: outsider.id })).status).toBe(404);
    expect((await post(server, 'add-team-member', admin, { teamId: 'team_aaaaaaaaaaaaaaaaaaaaaaaa', userId: outsider.id })).status).toBe(404);
  });

  it('answers 403 for a team of another organization, even for one of its members', async () => {
    const { team, member } = await orgWithTeam();
    const other = await orgWithRoles(server);
    expect((await post(server, 'add-team-member', other.owner, { teamId: team.id, userId: member.id })).status).toBe(403);
  });
});

describe('auth.organization.removeTeamMember', () => {
  it('removes the user from the team only, audited', async () => {
    const { orgId, admin, member, team } = await orgWithTeam();
    await post(server, 'add-team-member', admin, { teamId: team.id, userId: member.id });
    const response = await post(server, 'remove-team-member', admin, { teamId: team.id, userId: member.id });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: true });
    expect(await server.db.sql`select 1 from team_members where team_id = ${team.id}`).toHaveLength(0);
    expect(await server.db.sql`select 1 from members where organization_id = ${orgId} and user_id = ${member.id}`).toHaveLength(1);
    expect((await auditOf(server, { targetId: team.id })).find((row) => row.action === 'team.member_removed')).toMatchObject({ actor_id: admin.id, metadata: { userId: member.id } });
  });

  it("answers 404 for a user not in the team and for an unknown team; 403 for another organization's team", async () => {
    const { admin, member, team } = await orgWithTeam();
    const other = await orgWithRoles(server);
    expect((await post(server, 'remove-team-member', admin, { teamId: team.id, userId: member.id })).status).toBe(404);
    expect((await post(server, 'remove-team-member', admin, { teamId: 'team_aaaaaaaaaaaaaaaaaaaaaaaa', userId: member.id })).status).toBe(404);
    expect((await post(server, 'remove-team-member', other.owner, { teamId: team.id, userId: member.id })).status).toBe(403);
  });

  it('answers 401 without a session', async () => {
    const { team, member } = await orgWithTeam();
    expect((await post(server, 'remove-team-member', null, { teamId: team.id, userId: member.id })).status).toBe(401);
  });
});

/**
 * Who may call which organization route: each route with a request that succeeds when allowed,
 * made by the owner, an admin, a member and a signed-in non-member of a fresh organization.
 * The expectations follow the role matrix (src/auth/permissions.ts, ../shared/design/identity.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.ts';
import { startTestServer, type TestResponse, type TestServer } from '../../support/server.ts';
import { addMembership, createUser, type TestUser } from '../../support/users.ts';
import { get, memberId, orgWithRoles, post, TEST_ENV, type OrgWithRoles } from './fixtures.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ env: TEST_ENV });
});
afterAll(() => server.close());

interface Setup extends OrgWithRoles {
  /** A member the route acts on; also in the team. */
  targetMemberId: string;
  target: TestUser;
  teamId: string;
  invitationId: string;
}

async function setup(): Promise<Setup> {
  const org = await orgWithRoles(server);
  const target = await createUser(server.db, { name: 'Tess Target' });
  await addMembership(server.db, target, 'member', org.orgId);
  const teamId = newId('team');
  await server.db.sql`insert into teams (id, organization_id, name) values (${teamId}, ${org.orgId}, 'Research')`;
  await server.db.sql`insert into team_members (id, team_id, user_id) values (${newId('tm')}, ${teamId}, ${target.id})`;
  const invitationId = newId('inv');
  await server.db.sql`insert into invitations (id, organization_id, email, role, inviter_id, expires_at)
                      values (${invitationId}, ${org.orgId}, ${`invitee-${invitationId}@example.com`}, 'member', ${org.owner.id}, now() + interval '1 day')`;
  return { ...org, target, targetMemberId: await memberId(server, org.orgId, target), teamId, invitationId };
}

type Call = (s: Setup, as: TestUser) => Promise<TestResponse>;
const roles = ['owner', 'admin', 'member', 'outsider'] as const;

//                                                                                                  owner admin member non-member
const matrix: [string, Call, [number, number, number, number]][] = [
  ['create', (_s, as) => post(server, 'create', as, { name: 'New', slug: `new-${newId('x').slice(2, 14)}` }), [200, 200, 200, 200]],
  ['list', (_s, as) => get(server, 'list', as), [200, 200, 200, 200]],
  ['update', (s, as) => post(server, 'update', as, { organizationId: s.orgId, data: { name: 'Renamed' } }), [200, 200, 403, 403]],
  ['delete', (s, as) => post(server, 'delete', as, { organizationId: s.orgId, confirmSlug: s.slug }), [200, 403, 403, 403]],
  ['get-full-organization', (s, as) => get(server, 'get-full-organization', as, { organizationId: s.orgId }), [200, 200, 200, 403]],
  ['list-members', (s, as) => get(server, 'list-members', as, { organizationId: s.orgId }), [200, 200, 200, 403]],
  ['invite-member', (s, as) => post(server, 'invite-member', as, { organizationId: s.orgId, email: `new-${newId('x')}@example.com`, role: 'member' }), [200, 200, 403, 403]],
  ['cancel-invitation', (s, as) => post(server, 'cancel-invitation', as, { invitationId: s.invitationId }), [200, 200, 403, 403]],
  ['remove-member', (s, as) => post(server, 'remove-member', as, { organizationId: s.orgId, memberIdOrEmail: s.targetMemberId }), [200, 200, 403, 403]],
  ['update-member-role', (s, as) => post(server, 'update-member-role', as, { organizationId: s.orgId, memberId: s.targetMemberId, role: 'admin' }), [200, 200, 403, 403]],
  // The owner is the sole owner here, so leaving is refused (409), not forbidden.
  ['leave', (s, as) => post(server, 'leave', as, { organizationId: s.orgId }), [409, 200, 200, 403]],
  ['create-team', (s, as) => post(server, 'create-team', as, { organizationId: s.orgId, name: 'Design' }), [200, 200, 403, 403]],
  ['update-team', (s, as) => post(server, 'update-team', as, { teamId: s.teamId, data: { name: 'R&D' } }), [200, 200, 403, 403]],
  ['remove-team', (s, as) => post(server, 'remove-team', as, { organizationId: s.orgId, teamId: s.teamId }), [200, 200, 403, 403]],
  ['list-teams', (s, as) => get(server, 'list-teams', as, { organizationId: s.orgId }), [200, 200, 200, 403]],
  ['add-team-member', (s, as) => post(server, 'add-team-member', as, { teamId: s.teamId, userId: s.member.id }), [200, 200, 403, 403]],
  ['remove-team-member', (s, as) => post(server, 'remove-team-member', as, { teamId: s.teamId, userId: s.target.id }), [200, 200, 403, 403]],
];

const cases = matrix.flatMap(([route, call, statuses]) => roles.map((role, index) => ({ route, role, call, status: statuses[index]! })));

describe('organization routes by role', () => {
  it.each(cases)('$route as $role answers $status', async ({ role, call, status }) => {
    const s = await setup();
    const response = await call(s, s[role]);
    expect(response.status, JSON.stringify(await response.clone().json())).toBe(status);
    if (status === 403) expect(await response.json()).toMatchObject({ code: 'FORBIDDEN', defined: true });
  });

  it('reads the role from the database on every request: a demoted admin loses access at once', async () => {
    const s = await setup();
    expect((await post(server, 'create-team', s.admin, { organizationId: s.orgId, name: 'A' })).status).toBe(200);
    await server.db.sql`update members set role = 'member' where organization_id = ${s.orgId} and user_id = ${s.admin.id}`;
    expect((await post(server, 'create-team', s.admin, { organizationId: s.orgId, name: 'B' })).status).toBe(403);
  });
});

describe('only owners act on owners', () => {
  async function withSecondOwner() {
    const s = await setup();
    const coOwner = await createUser(server.db);
    await addMembership(server.db, coOwner, 'owner', s.orgId);
    const ownerInvitation = newId('inv');
    await server.db.sql`insert into invitations (id, organization_id, email, role, expires_at)
                        values (${ownerInvitation}, ${s.orgId}, ${`owner-${ownerInvitation}@example.com`}, 'owner', now() + interval '1 day')`;
    return { ...s, coOwner, coOwnerMemberId: await memberId(server, s.orgId, coOwner), ownerInvitation };
  }
  type S = Awaited<ReturnType<typeof withSecondOwner>>;

  const cases: [string, (s: S, as: TestUser) => Promise<TestResponse>][] = [
    ['remove an owner', (s, as) => post(server, 'remove-member', as, { organizationId: s.orgId, memberIdOrEmail: s.coOwnerMemberId })],
    ['demote an owner', (s, as) => post(server, 'update-member-role', as, { organizationId: s.orgId, memberId: s.coOwnerMemberId, role: 'admin' })],
    ['make a member owner', (s, as) => post(server, 'update-member-role', as, { organizationId: s.orgId, memberId: s.targetMemberId, role: 'owner' })],
    ['invite an owner', (s, as) => post(server, 'invite-member', as, { organizationId: s.orgId, email: `o-${newId('x')}@example.com`, role: 'owner' })],
    ['cancel an owner invitation', (s, as) => post(server, 'cancel-invitation', as, { invitationId: s.ownerInvitation })],
  ];

  it.each(cases)('an admin cannot %s (403), an owner can', async (_label, call) => {
    const s = await withSecondOwner();
    const refused = await call(s, s.admin);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'FORBIDDEN', defined: true });
    expect((await call(s, s.owner)).status).toBe(200);
  });
});

/**
 * Invitations end to end: the app mails through nodemailer to a real SMTP server started here,
 * the invitee reads the invitation id from the mail and accepts it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlanLimits } from '../../../src/credits/plans.ts';
import { newId } from '../../../src/ids.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../../support/smtp.ts';
import { addMembership, createUser, type TestUser } from '../../support/users.ts';
import { auditOf, orgWithRoles, post, TEST_ENV } from './fixtures.ts';

const PUBLIC_URL = 'https://api.example.com';
const HOUR = 3600_000;
let now = new Date('2026-11-21T09:15:00.000Z');
/** Organizations under a free plan with two member seats; the others are unbilled. */
const billed = new Set<string>();
const freePlan: PlanLimits = { plan: 'free', limits: { workspaces: 3, members: 2, aiCredits: 200, storageBytes: 1073741824 } };

let receiver: SmtpReceiver;
let server: TestServer;
beforeAll(async () => {
  receiver = await startSmtpReceiver();
  // No test here makes an AI call; the servers of other mail settings share this one's database.
  server = await startTestServer({
    aiService: false,
    env: { ...TEST_ENV, EMAIL_PROVIDER: 'smtp', SMTP_URL: receiver.url, PUBLIC_URL },
    overrides: { now: () => now, plans: { limitsFor: async (organizationId) => (billed.has(organizationId) ? freePlan : null) } },
  });
});
afterAll(async () => {
  await server?.close();
  await receiver?.stop();
});

const address = (label: string) => `${label}-${newId('x').slice(2, 12)}@example.com`;

async function invite(by: TestUser, body: Record<string, unknown>) {
  return post(server, 'invite-member', by, body);
}

/** The invitation id, read from the one mail sent to `to`, as an invitee would. */
async function invitationIdFromMail(to: string, count = 1): Promise<string> {
  const mails = await receiver.waitForMessagesTo(to, count);
  expect(mails).toHaveLength(count);
  return /Invitation id: (inv_[a-z0-9]+)/.exec(mails.at(-1)!.text)![1]!;
}

describe('invite, mail, accept', () => {
  it('invites by email, mails the link and id, and the invitee joins the organization and the team', async () => {
    const { orgId, admin } = await orgWithRoles(server);
    await server.db.sql`update organizations set name = 'Acme Corp' where id = ${orgId}`;
    const teamId = newId('team');
    await server.db.sql`insert into teams (id, organization_id, name) values (${teamId}, ${orgId}, 'Research')`;
    const email = address('grace');

    const response = await invite(admin, { organizationId: orgId, email: email.toUpperCase(), role: 'member', teamId });
    expect(response.status).toBe(200);
    const invitation = await response.json();
    expect(invitation).toEqual({
      id: expect.stringMatching(/^inv_/),
      organizationId: orgId,
      email: email.toUpperCase(),
      role: 'member',
      teamId,
      status: 'pending',
      inviterId: admin.id,
      expiresAt: new Date(now.getTime() + 48 * HOUR).toISOString(),
      createdAt: now.toISOString(),
    });

    const [mail] = await receiver.waitForMessagesTo(email);
    expect(mail!.subject).toBe('Adam Admin invited you to join Acme Corp');
    expect(mail!.text).toContain(`POST ${PUBLIC_URL}/api/auth/organization/accept-invitation`);
    expect(mail!.text).toContain(`{"invitationId":"${invitation.id}"}`);
    expect(mail!.text).toContain(`${PUBLIC_URL}/api/auth/organization/reject-invitation`);
    expect(await invitationIdFromMail(email)).toBe(invitation.id);

    const grace = await createUser(server.db, { email, name: 'Grace Hopper' });
    now = new Date(now.getTime() + 47 * HOUR);
    const accepted = await post(server, 'accept-invitation', grace, { invitationId: invitation.id });
    expect(accepted.status).toBe(200);
    const body = await accepted.json();
    expect(body.invitation).toMatchObject({ id: invitation.id, status: 'accepted' });
    expect(body.member).toMatchObject({ organizationId: orgId, userId: grace.id, role: 'member', user: { email, name: 'Grace Hopper' } });
    expect(await server.db.sql`select 1 from team_members where team_id = ${teamId} and user_id = ${grace.id}`).toHaveLength(1);

    const audit = await auditOf(server, { organizationId: orgId });
    expect(audit).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          action: 'invitation.created',
          actor_id: admin.id,
          target_type: 'invitation',
          target_id: invitation.id,
          metadata: { email: email.toUpperCase(), role: 'member', teamId, resent: false },
        }),
        expect.objectContaining({ action: 'invitation.accepted', actor_id: grace.id, target_id: invitation.id }),
        expect.objectContaining({
          action: 'member.added',
          actor_id: grace.id,
          target_type: 'member',
          target_id: body.member.id,
          metadata: { userId: grace.id, role: 'member', invitationId: invitation.id, teamId },
        }),
      ]),
    );

    const again = await post(server, 'accept-invitation', grace, { invitationId: invitation.id });
    expect(again.status).toBe(412);
  });

  it('answers 409 for a pending invitation, and re-sends it with a fresh expiry when resend is true', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const email = address('resend');
    const first = await (await invite(owner, { organizationId: orgId, email, role: 'member' })).json();
    const conflict = await invite(owner, { organizationId: orgId, email: email.toUpperCase(), role: 'member' });
    expect(conflict.status).toBe(409);
    expect(await conflict.json()).toMatchObject({ code: 'CONFLICT', defined: true });

    now = new Date(now.getTime() + 10 * HOUR);
    const resent = await invite(owner, { organizationId: orgId, email, role: 'admin', resend: true });
    expect(resent.status).toBe(200);
    expect(await resent.json()).toMatchObject({ id: first.id, role: 'admin', createdAt: first.createdAt, expiresAt: new Date(now.getTime() + 48 * HOUR).toISOString() });
    expect(await invitationIdFromMail(email, 2)).toBe(first.id);
    expect((await auditOf(server, { targetId: first.id })).map((row) => row.metadata!.resent)).toEqual([false, true]);
  });

  it('answers 409 when the address already belongs to a member', async () => {
    const { orgId, owner, member } = await orgWithRoles(server);
    const response = await invite(owner, { organizationId: orgId, email: member.email.toUpperCase(), role: 'member' });
    expect(response.status).toBe(409);
    expect(receiver.messagesTo(member.email)).toEqual([]);
  });

  it('answers 404 for a team of another organization', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const other = await orgWithRoles(server);
    const teamId = newId('team');
    await server.db.sql`insert into teams (id, organization_id, name) values (${teamId}, ${other.orgId}, 'Theirs')`;
    expect((await invite(owner, { organizationId: orgId, email: address('t'), role: 'member', teamId })).status).toBe(404);
  });

  it("answers 403 when an admin invites an owner or re-sends an owner's invitation, and 403 to a member", async () => {
    const { orgId, owner, admin, member } = await orgWithRoles(server);
    expect((await invite(admin, { organizationId: orgId, email: address('o'), role: 'owner' })).status).toBe(403);
    const ownerInvite = await (await invite(owner, { organizationId: orgId, email: address('o'), role: 'owner' })).json();
    expect((await invite(admin, { organizationId: orgId, email: ownerInvite.email, role: 'member', resend: true })).status).toBe(403);
    expect((await server.db.sql`select role from invitations where id = ${ownerInvite.id}`)[0]!.role).toBe('owner');
    expect((await invite(member, { organizationId: orgId, email: address('m'), role: 'member' })).status).toBe(403);
  });

  it('answers 400 for an address that is not one', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    expect((await invite(owner, { organizationId: orgId, email: 'not an address', role: 'member' })).status).toBe(400);
  });
});

describe('the member limit (while billing is configured)', () => {
  it("counts members plus pending, unexpired invitations against the plan's seats", async () => {
    const owner = await createUser(server.db);
    const orgId = await addMembership(server.db, owner, 'owner');
    billed.add(orgId);
    const first = await invite(owner, { organizationId: orgId, email: address('seat'), role: 'member' });
    expect(first.status).toBe(200);
    const refused = await invite(owner, { organizationId: orgId, email: address('seat'), role: 'member' });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({
      defined: true,
      code: 'LIMIT_REACHED',
      status: 403,
      message: expect.any(String),
      data: { kind: 'members', limit: 2, plan: 'free' },
    });
    // Re-sending the invitation that holds the seat is allowed (past the re-send cooldown).
    now = new Date(now.getTime() + 60_000);
    expect((await invite(owner, { organizationId: orgId, email: (await first.json()).email, role: 'member', resend: true })).status).toBe(200);
    // Once it expires it holds no seat.
    now = new Date(now.getTime() + 49 * HOUR);
    expect((await invite(owner, { organizationId: orgId, email: address('seat'), role: 'member' })).status).toBe(200);
  });

  it('does not apply while the plan lookup answers null', async () => {
    const { orgId, owner } = await orgWithRoles(server); // three members already
    expect((await invite(owner, { organizationId: orgId, email: address('free'), role: 'member' })).status).toBe(200);
  });
});

describe('auth.organization.acceptInvitation errors', () => {
  async function pending(role: 'member' | 'admin' = 'member') {
    const org = await orgWithRoles(server);
    const email = address('invitee');
    const invitation = await (await invite(org.owner, { organizationId: org.orgId, email, role })).json();
    return { ...org, email, invitation };
  }

  it('answers 404 for an unknown invitation', async () => {
    const user = await createUser(server.db);
    expect((await post(server, 'accept-invitation', user, { invitationId: 'inv_aaaaaaaaaaaaaaaaaaaaaaaa' })).status).toBe(404);
  });

  it('answers 403 to another user, and to the invitee whose address is not verified', async () => {
    const { invitation, email } = await pending();
    const stranger = await createUser(server.db);
    const wrong = await post(server, 'accept-invitation', stranger, { invitationId: invitation.id });
    expect(wrong.status).toBe(403);
    const unverified = await createUser(server.db, { email, emailVerified: false });
    expect((await post(server, 'accept-invitation', unverified, { invitationId: invitation.id })).status).toBe(403);
    expect((await server.db.sql`select status from invitations where id = ${invitation.id}`)[0]!.status).toBe('pending');
  });

  it('matches the address case-insensitively', async () => {
    const { invitation, email } = await pending();
    const user = await createUser(server.db, { email: email.toUpperCase() });
    expect((await post(server, 'accept-invitation', user, { invitationId: invitation.id })).status).toBe(200);
  });

  it('answers 412 once the invitation expired', async () => {
    const { invitation, email } = await pending();
    const user = await createUser(server.db, { email });
    now = new Date(now.getTime() + 48 * HOUR);
    const response = await post(server, 'accept-invitation', user, { invitationId: invitation.id });
    expect(response.status).toBe(412);
    expect(await response.json()).toMatchObject({ code: 'PRECONDITION_FAILED', defined: true });
  });

  it('answers 412 for a canceled invitation', async () => {
    const { invitation, email, admin } = await pending();
    expect((await post(server, 'cancel-invitation', admin, { invitationId: invitation.id })).status).toBe(200);
    const user = await createUser(server.db, { email });
    expect((await post(server, 'accept-invitation', user, { invitationId: invitation.id })).status).toBe(412);
  });

  it('answers 409 when the invitee is already a member, and leaves the invitation pending', async () => {
    const { invitation, email, orgId } = await pending();
    const user = await createUser(server.db, { email });
    await addMembership(server.db, user, 'member', orgId);
    expect((await post(server, 'accept-invitation', user, { invitationId: invitation.id })).status).toBe(409);
    expect((await server.db.sql`select status from invitations where id = ${invitation.id}`)[0]!.status).toBe('pending');
  });

  it('joins without a team when the invited team was deleted meanwhile', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const teamId = newId('team');
    await server.db.sql`insert into teams (id, organization_id, name) values (${teamId}, ${orgId}, 'Gone soon')`;
    const email = address('teamless');
    const invitation = await (await invite(owner, { organizationId: orgId, email, role: 'admin', teamId })).json();
    expect((await post(server, 'remove-team', owner, { organizationId: orgId, teamId })).status).toBe(200);
    const user = await createUser(server.db, { email });
    const response = await post(server, 'accept-invitation', user, { invitationId: invitation.id });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ invitation: { teamId: null }, member: { role: 'admin' } });
  });
});

describe('auth.organization.rejectInvitation', () => {
  it('marks the invitation rejected, audited; a second answer is 412', async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const email = address('nope');
    await invite(owner, { organizationId: orgId, email, role: 'member' });
    const invitationId = await invitationIdFromMail(email);
    const user = await createUser(server.db, { email });
    const response = await post(server, 'reject-invitation', user, { invitationId });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ invitation: { id: invitationId, status: 'rejected' }, member: null });
    expect(await server.db.sql`select 1 from members where user_id = ${user.id}`).toHaveLength(0);
    expect((await auditOf(server, { targetId: invitationId })).map((row) => [row.action, row.actor_id])).toEqual([
      ['invitation.created', owner.id],
      ['invitation.rejected', user.id],
    ]);
    expect((await post(server, 'reject-invitation', user, { invitationId })).status).toBe(412);
  });

  it('answers 404 for an unknown invitation and 403 to anyone but the invitee', async () => {
    const { orgId, owner, member } = await orgWithRoles(server);
    const invitation = await (await invite(owner, { organizationId: orgId, email: address('x'), role: 'member' })).json();
    expect((await post(server, 'reject-invitation', member, { invitationId: 'inv_aaaaaaaaaaaaaaaaaaaaaaaa' })).status).toBe(404);
    expect((await post(server, 'reject-invitation', member, { invitationId: invitation.id })).status).toBe(403);
  });
});

describe('auth.organization.cancelInvitation', () => {
  it('cancels a pending invitation, audited; a second cancel is 412', async () => {
    const { orgId, owner, admin } = await orgWithRoles(server);
    const invitation = await (await invite(owner, { organizationId: orgId, email: address('c'), role: 'member' })).json();
    const response = await post(server, 'cancel-invitation', admin, { invitationId: invitation.id });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: invitation.id, status: 'canceled' });
    expect((await auditOf(server, { targetId: invitation.id })).find((row) => row.action === 'invitation.canceled')).toMatchObject({
      actor_id: admin.id,
      organization_id: orgId,
      metadata: { email: invitation.email, role: 'member', teamId: null },
    });
    const again = await post(server, 'cancel-invitation', admin, { invitationId: invitation.id });
    expect(again.status).toBe(412);
  });

  it("answers 404 for an unknown invitation and 403 for another organization's", async () => {
    const { orgId, owner } = await orgWithRoles(server);
    const other = await orgWithRoles(server);
    const invitation = await (await invite(owner, { organizationId: orgId, email: address('c'), role: 'member' })).json();
    expect((await post(server, 'cancel-invitation', other.owner, { invitationId: 'inv_aaaaaaaaaaaaaaaaaaaaaaaa' })).status).toBe(404);
    expect((await post(server, 'cancel-invitation', other.owner, { invitationId: invitation.id })).status).toBe(403);
  });
});

describe('when the mail server fails', () => {
  it('answers 500 and keeps the invitation pending, so resend can try again', async () => {
    let failing = true;
    const flaky = await startTestServer({
      aiService: false,
      db: server.db,
      env: TEST_ENV,
      overrides: {
        mailer: {
          send: async () => {
            if (failing) throw new Error('mail server down');
          },
        },
      },
    });
    try {
      const { orgId, owner } = await orgWithRoles(flaky);
      const email = address('flaky');
      expect((await post(flaky, 'invite-member', owner, { organizationId: orgId, email, role: 'member' })).status).toBe(500);
      expect(await flaky.db.sql`select status from invitations where organization_id = ${orgId}`).toEqual([{ status: 'pending' }]);
      failing = false;
      expect((await post(flaky, 'invite-member', owner, { organizationId: orgId, email, role: 'member', resend: true })).status).toBe(200);
    } finally {
      await flaky.close();
    }
  });
});

describe('without an email provider', () => {
  it('answers 412 to invite-member and creates nothing', async () => {
    const quiet = await startTestServer({ aiService: false, db: server.db, env: { ...TEST_ENV, EMAIL_PROVIDER: 'none' } });
    try {
      const { orgId, owner } = await orgWithRoles(quiet);
      const response = await post(quiet, 'invite-member', owner, { organizationId: orgId, email: address('q'), role: 'member' });
      expect(response.status).toBe(412);
      expect(await response.json()).toMatchObject({ code: 'PRECONDITION_FAILED', defined: true });
      expect(await quiet.db.sql`select 1 from invitations where organization_id = ${orgId}`).toHaveLength(0);
    } finally {
      await quiet.close();
    }
  });
});

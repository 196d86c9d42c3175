/**
 * Identity routes: invitations (inviteMember, acceptInvitation, rejectInvitation, cancelInvitation).
 * An invitation is valid 48 hours; only the user whose verified email it names can answer it.
 */
import { type AuthHandlers, signedIn } from '../context.ts';
import { writeAudit } from '../audit/store.ts';
import type { Principal } from '../auth/principal.ts';
import { retryAfter } from '../auth/rate-limit.ts';
import { findUser } from '../auth/users-store.ts';
import { ApiError } from '../contract/errors.ts';
import type { Db } from '../db/db.ts';
import { newId } from '../ids.ts';
import { invitationEmail } from './invitation-email.ts';
import { assertMayActOn, callerRole } from './member-guards.ts';
import { findInvitation, insertInvitation, pendingInvitationFor, renewInvitation, setInvitationStatus, takenSeats, toInvitation, unmarkSent, type InvitationRow } from './invitations-store.ts';
import { findMember, insertMemberUnlessPresent, membersOf, roleIn, toMember, type OrganizationRole } from './members-store.ts';
import { lockOrganization } from './store.ts';
import { ensureTeamMember, findTeam } from './teams-store.ts';

export const INVITATION_LIFETIME_MS = 48 * 3600_000;

const RESEND_COOLDOWN_MESSAGE = 'This invitation was sent moments ago, try again later.';

export const invitationRoutes = {
  async 'auth.organization.inviteMember'(input, ctx) {
    const principal = signedIn(ctx);
    const { mailer, plans, db, config } = ctx.services;
    if (!mailer) throw new ApiError('PRECONDITION_FAILED', { message: 'No email provider is configured, so invitations cannot be sent.' });
    // Asked before the transaction: a lookup must never wait for a connection the transaction holds.
    const plan = await plans.limitsFor(input.organizationId);
    const now = ctx.services.now();
    const expiresAt = new Date(now.getTime() + INVITATION_LIFETIME_MS);
    const cooldownMs = config.mailBudget.resendCooldownSeconds * 1000;
    // The mail counts against the address's budget, all kinds and senders together (email/outbox.ts);
    // spent, the answer is 429 and nothing is written. Counted before the transaction, as no pool
    // query may run inside it; the refusals that repeated requests meet (an existing invitation
    // without `resend`, a re-send within the cooldown, the owner rules) are answered first, with the
    // role the binding layer found, so that they spend none of the budget. The transaction checks
    // them again under the organization's lock.
    if (ctx.tenant) assertInvitable(ctx.tenant.role, input, await pendingInvitationFor(db.sql, input.organizationId, input.email), now, cooldownMs);
    const slot = await mailer.reserve(input.email);
    const { invitation, organizationName, inviterName, previouslySent } = await db.sql.begin(async (tx) => {
      // The organization's row lock serializes invitations, so two at once cannot both take the last
      // seat ("no key": rows that only reference the organization, like new members, need not wait).
      const organization = await lockOrganization(tx, input.organizationId);
      if (!organization) throw new ApiError('FORBIDDEN'); // deleted since the access check
      const members = await membersOf(tx, input.organizationId);
      const actor = callerRole(members, principal, ctx.tenant?.permission);
      assertInvitable(actor, input, null, now, cooldownMs); // the owner rule, before the team's 404
      if (input.teamId !== undefined) {
        const team = await findTeam(tx, input.teamId);
        if (!team || team.organizationId !== input.organizationId) throw new ApiError('NOT_FOUND', { message: 'No such team in this organization.' });
      }
      const email = input.email.toLowerCase();
      if (members.some((member) => member.email.toLowerCase() === email)) throw new ApiError('CONFLICT', { message: 'This address already belongs to a member.' });
      const pending = await pendingInvitationFor(tx, input.organizationId, input.email);
      // One invitation is mailed at most once per cooldown, on any instance: the organization's lock
      // orders this check and the write of sentAt below.
      assertInvitable(actor, input, pending, now, cooldownMs);
      if (plan) {
        // Seats: members plus invitations that can still be accepted (an expired one holds none);
        // a re-sent invitation is already among them.
        if ((await takenSeats(tx, input.organizationId, now, pending?.id)) >= plan.limits.members) {
          throw new ApiError('LIMIT_REACHED', { message: "The plan's member limit is reached.", data: { kind: 'members', limit: plan.limits.members, plan: plan.plan } });
        }
      }
      // A re-send takes the request's role and team: it is the inviter's current intent.
      const terms = { role: input.role, teamId: input.teamId ?? null, inviterId: principal.userId, expiresAt, now };
      const row = pending ? await renewInvitation(tx, pending.id, terms) : await insertInvitation(tx, { id: newId('inv'), organizationId: input.organizationId, email: input.email, ...terms });
      await writeAudit(
        tx,
        {
          organizationId: input.organizationId,
          action: 'invitation.created',
          actor: principal,
          targetType: 'invitation',
          targetId: row.id,
          metadata: { email: row.email, role: row.role, teamId: row.teamId, resent: Boolean(pending) },
        },
        now,
      );
      const inviter = members.find((member) => member.userId === principal.userId)!;
      return { invitation: row, organizationName: organization.name, inviterName: inviter.name, previouslySent: pending?.sentAt ?? null };
    });
    // Sent after the commit so no transaction waits on the mail server. If sending fails the
    // answer is a 500 and the invitation stays pending, not marked sent: `resend: true` tries again
    // at once (the failed attempt still counted against the address's budget).
    try {
      await slot.send(
        invitationEmail({
          to: invitation.email,
          invitationId: invitation.id,
          organizationName,
          inviterName,
          role: invitation.role,
          expiresAt: invitation.expiresAt,
          publicUrl: config.publicUrl,
        }),
      );
    } catch (error) {
      await unmarkSent(db.sql, invitation.id, invitation.sentAt!, previouslySent);
      throw error;
    }
    return { body: toInvitation(invitation) };
  },

  async 'auth.organization.acceptInvitation'(input, ctx) {
    const principal = signedIn(ctx);
    const now = ctx.services.now();
    // The plan is asked before the transaction (a lookup must never wait for the connection the
    // transaction holds); an invitation's organization never changes, so reading it first is safe.
    const known = await findInvitation(ctx.services.db.sql, input.invitationId);
    const plan = known ? await ctx.services.plans.limitsFor(known.organizationId) : null;
    const body = await ctx.services.db.sql.begin(async (tx) => {
      // Organization first, then the invitation: the order inviteMember takes them in, so a
      // re-send and an acceptance of one invitation cannot deadlock.
      if (plan && known) await lockOrganization(tx, known.organizationId);
      const invitation = await inviteeInvitation(tx, principal, input.invitationId);
      if (invitation.status !== 'pending' || invitation.expiresAt <= now) throw new ApiError('PRECONDITION_FAILED', { message: 'This invitation is no longer pending or has expired.' });
      // The invitation held a seat since it was sent; it still needs one if the plan shrank since.
      if (plan && (await takenSeats(tx, invitation.organizationId, now, invitation.id)) >= plan.limits.members) {
        throw new ApiError('LIMIT_REACHED', { message: "The plan's member limit is reached.", data: { kind: 'members', limit: plan.limits.members, plan: plan.plan } });
      }
      const memberId = newId('mem');
      const added = await insertMemberUnlessPresent(tx, { id: memberId, organizationId: invitation.organizationId, userId: principal.userId, role: invitation.role, now });
      if (!added) throw new ApiError('CONFLICT', { message: 'You are already a member of this organization.' });
      // team_id is null when the team was deleted after the invitation was sent.
      if (invitation.teamId) {
        await ensureTeamMember(tx, { id: newId('tm'), teamId: invitation.teamId, userId: principal.userId, now });
      }
      const accepted = await setInvitationStatus(tx, invitation.id, 'accepted', now);
      await audit(tx, principal, accepted, 'invitation.accepted', now);
      await writeAudit(
        tx,
        {
          organizationId: invitation.organizationId,
          action: 'member.added',
          actor: principal,
          targetType: 'member',
          targetId: memberId,
          metadata: { userId: principal.userId, role: invitation.role, invitationId: invitation.id, teamId: invitation.teamId },
        },
        now,
      );
      return { invitation: toInvitation(accepted), member: toMember((await findMember(tx, memberId))!) };
    });
    return { body };
  },

  async 'auth.organization.rejectInvitation'(input, ctx) {
    const principal = signedIn(ctx);
    const now = ctx.services.now();
    const body = await ctx.services.db.sql.begin(async (tx) => {
      const invitation = await inviteeInvitation(tx, principal, input.invitationId);
      if (invitation.status !== 'pending') throw new ApiError('PRECONDITION_FAILED', { message: 'This invitation is no longer pending.' });
      const rejected = await setInvitationStatus(tx, invitation.id, 'rejected', now);
      await audit(tx, principal, rejected, 'invitation.rejected', now);
      return { invitation: toInvitation(rejected), member: null };
    });
    return { body };
  },

  async 'auth.organization.cancelInvitation'(_input, ctx) {
    const principal = signedIn(ctx);
    const now = ctx.services.now();
    const body = await ctx.services.db.sql.begin(async (tx) => {
      const invitation = await findInvitation(tx, ctx.row.id, { lock: true });
      if (!invitation) throw new ApiError('NOT_FOUND', { message: 'No such invitation.' }); // deleted meanwhile
      if (invitation.role === 'owner' && (await roleIn(tx, invitation.organizationId, principal.userId)) !== 'owner') {
        throw new ApiError('FORBIDDEN', { message: 'Only an owner can cancel an invitation to become owner.' });
      }
      if (invitation.status !== 'pending') throw new ApiError('PRECONDITION_FAILED', { message: 'This invitation is no longer pending.' });
      const canceled = await setInvitationStatus(tx, invitation.id, 'canceled', now);
      await audit(tx, principal, canceled, 'invitation.canceled', now);
      return toInvitation(canceled);
    });
    return { body };
  },
} satisfies AuthHandlers;

/**
 * The rules of an invitation from `actor` (inviteMember's input) to an address with the `pending`
 * invitation, if any: only an owner invites an owner or re-sends an owner's invitation (403); a
 * pending one is re-sent only with `resend` (409) and not within the cooldown after its last mail
 * (429, with the seconds left).
 */
function assertInvitable(actor: OrganizationRole, input: { role: OrganizationRole; resend?: boolean | undefined }, pending: InvitationRow | null, now: Date, cooldownMs: number): void {
  if (input.role === 'owner' && actor !== 'owner') throw new ApiError('FORBIDDEN', { message: 'Only an owner can invite an owner.' });
  if (!pending) return;
  if (!input.resend) throw new ApiError('CONFLICT', { message: 'A pending invitation for this address exists: pass resend: true to send it again.' });
  assertMayActOn(actor, pending.role, input.role);
  const until = (pending.sentAt?.getTime() ?? -Infinity) + cooldownMs;
  if (until > now.getTime()) throw new ApiError('TOO_MANY_REQUESTS', { message: RESEND_COOLDOWN_MESSAGE, headers: { 'Retry-After': String(retryAfter(until, now.getTime())) } });
}

/**
 * The invitation, locked, when the caller is its invitee: their address must be verified and
 * equal the invited one (case aside). 404 for an unknown id, 403 for anyone else.
 */
async function inviteeInvitation(tx: Db, principal: Principal, invitationId: string): Promise<InvitationRow> {
  const invitation = await findInvitation(tx, invitationId, { lock: true });
  if (!invitation) throw new ApiError('NOT_FOUND', { message: 'No such invitation.' });
  const user = await findUser(tx, principal.userId);
  if (!user || user.email.toLowerCase() !== invitation.email.toLowerCase()) {
    throw new ApiError('FORBIDDEN', { message: 'This invitation was sent to another email address.' });
  }
  if (!user.emailVerified) throw new ApiError('FORBIDDEN', { message: 'Verify your email address before answering the invitation.' });
  return invitation;
}

function audit(tx: Db, principal: Principal, invitation: InvitationRow, action: string, now: Date): Promise<string> {
  return writeAudit(
    tx,
    {
      organizationId: invitation.organizationId,
      action,
      actor: principal,
      targetType: 'invitation',
      targetId: invitation.id,
      metadata: { email: invitation.email, role: invitation.role, teamId: invitation.teamId },
    },
    now,
  );
}

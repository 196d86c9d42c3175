/**
 * The invitations table (invitation-routes.ts): the only module that writes it, and where its rows
 * become camelCase; and their mapping to the contract's Invitation.
 */
import type { AuthRouteOutput } from '../../generated/auth-routes.ts';
import type { Db } from '../db/db.ts';
import type { Resource } from '../db/resource.ts';
import type { OrganizationRole } from './members-store.ts';

export type Invitation = AuthRouteOutput<'auth.organization.cancelInvitation'>;

export interface InvitationRow {
  id: string;
  organizationId: string;
  email: string;
  role: OrganizationRole;
  teamId: string | null;
  status: 'pending' | 'accepted' | 'rejected' | 'canceled';
  inviterId: string | null;
  expiresAt: Date;
  createdAt: Date;
  /** When it was last mailed; null when not known to have been (sql/0018_invitation_sent_at.sql). */
  sentAt: Date | null;
}

// Every column, camelCase. A constant list, so `unsafe` injects nothing from outside.
const INVITATION_COLUMNS =
  'id, organization_id as "organizationId", email, role, team_id as "teamId", status, inviter_id as "inviterId", ' + 'expires_at as "expiresAt", created_at as "createdAt", sent_at as "sentAt"';

export function toInvitation(row: InvitationRow): Invitation {
  return {
    id: row.id,
    organizationId: row.organizationId,
    email: row.email,
    role: row.role,
    teamId: row.teamId,
    status: row.status,
    inviterId: row.inviterId,
    expiresAt: row.expiresAt,
    createdAt: row.createdAt,
  };
}

/** The invitation; with `lock`, its row is locked (`for update`) until the transaction ends. */
export async function findInvitation(db: Db, id: string, options: { lock?: boolean } = {}): Promise<InvitationRow | null> {
  const [row] = await db<InvitationRow[]>`
    select ${db.unsafe(INVITATION_COLUMNS)} from invitations where id = ${id} ${options.lock ? db`for update` : db``}`;
  return row ?? null;
}

/** The loader of `resource: invitation` routes (src/composition/resources.ts). */
export const invitationResource: Resource<InvitationRow> = {
  load: (sql, id) => findInvitation(sql, id),
  organizationOf: (invitation) => invitation.organizationId,
  notFound: 'No such invitation.',
};

export async function pendingInvitationsOf(db: Db, organizationId: string): Promise<InvitationRow[]> {
  return db<InvitationRow[]>`
    select ${db.unsafe(INVITATION_COLUMNS)} from invitations
    where organization_id = ${organizationId} and status = 'pending'
    order by created_at desc, id desc`;
}

/** The newest pending invitation of this address (case aside) to the organization. */
export async function pendingInvitationFor(db: Db, organizationId: string, email: string): Promise<InvitationRow | null> {
  const [row] = await db<InvitationRow[]>`
    select ${db.unsafe(INVITATION_COLUMNS)} from invitations
    where organization_id = ${organizationId} and status = 'pending' and lower(email) = lower(${email})
    order by created_at desc limit 1`;
  return row ?? null;
}

/**
 * Seats taken: members plus invitations that can still be accepted at `now` (an expired one holds
 * none), leaving out the invitation `except` (one being re-sent).
 */
export async function takenSeats(db: Db, organizationId: string, now: Date, except: string | undefined): Promise<number> {
  const [seats] = await db<{ taken: number }[]>`
    select (select count(*) from members where organization_id = ${organizationId})::int
         + (select count(*) from invitations where organization_id = ${organizationId} and status = 'pending'
              and expires_at > ${now} and id <> ${except ?? ''})::int as taken`;
  return seats!.taken;
}

interface InvitationTerms {
  role: OrganizationRole;
  teamId: string | null;
  inviterId: string;
  expiresAt: Date;
  now: Date;
}

export async function insertInvitation(tx: Db, row: InvitationTerms & { id: string; organizationId: string; email: string }): Promise<InvitationRow> {
  const [invitation] = await tx<InvitationRow[]>`
    insert into invitations (id, organization_id, email, role, team_id, status, inviter_id, expires_at, created_at, updated_at, sent_at)
    values (${row.id}, ${row.organizationId}, ${row.email}, ${row.role}, ${row.teamId}, 'pending',
            ${row.inviterId}, ${row.expiresAt}, ${row.now}, ${row.now}, ${row.now})
    returning ${tx.unsafe(INVITATION_COLUMNS)}`;
  return invitation!;
}

/** Re-sends a pending invitation with new terms; both this and insertInvitation mark it mailed at `now`. */
export async function renewInvitation(tx: Db, id: string, terms: InvitationTerms): Promise<InvitationRow> {
  const [invitation] = await tx<InvitationRow[]>`
    update invitations set role = ${terms.role}, team_id = ${terms.teamId}, inviter_id = ${terms.inviterId},
                           expires_at = ${terms.expiresAt}, updated_at = ${terms.now}, sent_at = ${terms.now}
    where id = ${id} returning ${tx.unsafe(INVITATION_COLUMNS)}`;
  return invitation!;
}

/**
 * Its mail could not be sent: `sentAt` goes back to `previous`, unless a later re-send has marked
 * it since (its own time then stands).
 */
export async function unmarkSent(db: Db, id: string, sentAt: Date, previous: Date | null): Promise<void> {
  await db`update invitations set sent_at = ${previous} where id = ${id} and sent_at = ${sentAt}`;
}

export async function setInvitationStatus(db: Db, id: string, status: InvitationRow['status'], now: Date): Promise<InvitationRow> {
  const [row] = await db<InvitationRow[]>`
    update invitations set status = ${status}, updated_at = ${now} where id = ${id} returning ${db.unsafe(INVITATION_COLUMNS)}`;
  return row!;
}

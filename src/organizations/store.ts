/**
 * The organizations table: the only module that writes it, and where its rows become camelCase
 * (routes.ts; the Stripe customer id for billing/), and their mapping to the contract's shape.
 * Members, invitations and teams have their own stores: members-store.ts, invitations-store.ts,
 * teams-store.ts.
 */
import type { AuthRouteOutput } from '../../generated/auth-routes.ts';
import type { Db } from '../db/db.ts';
import { announceRevocation } from '../auth/revocations.ts';
import type { Resource } from '../db/resource.ts';
import { storageKey } from '../storage/driver.ts';
import type { OrganizationRole } from './members-store.ts';

export type Organization = AuthRouteOutput<'auth.organization.update'>;

export interface OrganizationRow {
  id: string;
  name: string;
  slug: string;
  logo: string | null;
  metadata: Record<string, unknown> | null;
  createdAt: Date;
}

// Every column, camelCase. A constant list, so `unsafe` injects nothing from outside.
const ORGANIZATION_COLUMNS = 'id, name, slug, logo, metadata, created_at as "createdAt"';

export function toOrganization(row: OrganizationRow): Organization {
  return { id: row.id, name: row.name, slug: row.slug, logo: row.logo, metadata: row.metadata, createdAt: row.createdAt };
}

export async function findOrganization(db: Db, id: string): Promise<OrganizationRow | null> {
  const [row] = await db<OrganizationRow[]>`select ${db.unsafe(ORGANIZATION_COLUMNS)} from organizations where id = ${id}`;
  return row ?? null;
}

/** The loader of `resource: organization` operations (the platform admin's, src/composition/resources.ts): the row is its own organization. */
export const organizationResource: Resource<OrganizationRow> = {
  load: (sql, id) => findOrganization(sql, id),
  organizationOf: (organization) => organization.id,
  notFound: 'No such organization.',
};

/** The organization, its row locked (`for no key update`: foreign keys may still point at it) until the transaction ends. */
export async function lockOrganization(tx: Db, id: string): Promise<OrganizationRow | null> {
  const [row] = await tx<OrganizationRow[]>`select ${tx.unsafe(ORGANIZATION_COLUMNS)} from organizations where id = ${id} for no key update`;
  return row ?? null;
}

/** The organizations the user is a member of, with their role there, in the order they joined. */
export async function organizationsOfUser(db: Db, userId: string): Promise<(OrganizationRow & { role: OrganizationRole })[]> {
  return db<(OrganizationRow & { role: OrganizationRole })[]>`
    select o.id, o.name, o.slug, o.logo, o.metadata, o.created_at as "createdAt", m.role
    from members m join organizations o on o.id = m.organization_id
    where m.user_id = ${userId}
    order by m.created_at, m.id`;
}

/**
 * Inserts the organization, or answers null when its slug is taken (`on conflict do nothing`: a
 * taken slug is an answer, not an aborted transaction).
 */
export async function insertOrganization(tx: Db, row: { id: string; name: string; slug: string; now: Date }): Promise<OrganizationRow | null> {
  const [organization] = await tx<OrganizationRow[]>`
    insert into organizations (id, name, slug, created_at, updated_at) values (${row.id}, ${row.name}, ${row.slug}, ${row.now}, ${row.now})
    on conflict (slug) do nothing
    returning ${tx.unsafe(ORGANIZATION_COLUMNS)}`;
  return organization ?? null;
}

/** Writes every editable field; a taken slug raises organizations_slug_key. */
export async function updateOrganization(tx: Db, id: string, fields: Pick<OrganizationRow, 'name' | 'slug' | 'logo' | 'metadata'>, now: Date): Promise<OrganizationRow> {
  const [row] = await tx<OrganizationRow[]>`
    update organizations
    set name = ${fields.name}, slug = ${fields.slug}, logo = ${fields.logo},
        metadata = ${fields.metadata === null ? null : tx.json(fields.metadata as never)}, updated_at = ${now}
    where id = ${id}
    returning ${tx.unsafe(ORGANIZATION_COLUMNS)}`;
  return row!;
}

/** The organization's Stripe customer (organizations.payment_customer_id). */
export async function customerOf(db: Db, organizationId: string): Promise<string | null> {
  const [row] = await db<{ paymentCustomerId: string | null }[]>`
    select payment_customer_id as "paymentCustomerId" from organizations where id = ${organizationId}`;
  return row?.paymentCustomerId ?? null;
}

/** Records the Stripe customer unless one is recorded already; answers the one that stands. */
export async function setCustomer(db: Db, organizationId: string, customerId: string): Promise<string> {
  const [row] = await db<{ paymentCustomerId: string }[]>`
    update organizations set payment_customer_id = coalesce(payment_customer_id, ${customerId}) where id = ${organizationId}
    returning payment_customer_id as "paymentCustomerId"`;
  return row?.paymentCustomerId ?? customerId;
}

/** The organization whose Stripe customer this is, or null. */
export async function organizationOfCustomer(db: Db, customerId: string): Promise<string | null> {
  const [row] = await db<{ id: string }[]>`select id from organizations where payment_customer_id = ${customerId}`;
  return row?.id ?? null;
}

/** The storage keys (`<organizationId>/<documentId>`) of the organization's documents. */
export async function documentKeysOf(db: Db, organizationId: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`select id from documents where organization_id = ${organizationId}`;
  return rows.map((row) => storageKey(organizationId, row.id));
}

/**
 * Deletes the organization. The foreign keys cascade to members, invitations, teams and their
 * memberships, subscriptions, workspaces and their documents, and the organization's own audit entries.
 * Its open job streams end at once (auth/revocations.ts).
 */
export async function deleteOrganization(tx: Db, id: string): Promise<void> {
  await tx`delete from organizations where id = ${id}`;
  await announceRevocation(tx, { kind: 'organization', organizationId: id });
}

/** Shared set-up for the organization route tests: calls by route name, and an organization with one user per role. */
import type { TestServer, TestResponse } from '../../support/server.ts';
import { addMembership, createUser, type TestUser } from '../../support/users.ts';

export const TEST_ENV = { AUTH_RATE_LIMIT_PER_MINUTE: '1000' };

/** POST /api/auth/organization/<route> as `user` (anonymous when null). */
export function post(server: TestServer, route: string, user: TestUser | null, body: unknown): Promise<TestResponse> {
  return server.fetch(`/api/auth/organization/${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...user?.headers },
    body: JSON.stringify(body),
  });
}

/** GET /api/auth/organization/<route>?query as `user`. */
export function get(server: TestServer, route: string, user: TestUser | null, query: Record<string, string | number> = {}): Promise<TestResponse> {
  const search = new URLSearchParams(Object.entries(query).map(([key, value]): [string, string] => [key, String(value)]));
  return server.fetch(`/api/auth/organization/${route}${search.size ? `?${search}` : ''}`, { headers: { ...user?.headers } });
}

export interface OrgWithRoles {
  orgId: string;
  slug: string;
  owner: TestUser;
  admin: TestUser;
  member: TestUser;
  outsider: TestUser;
}

/** A fresh organization with an owner, an admin and a member, and a signed-in user outside it. */
export async function orgWithRoles(server: TestServer): Promise<OrgWithRoles> {
  const { db } = server;
  const [owner, admin, member, outsider] = await Promise.all([
    createUser(db, { name: 'Olive Owner' }),
    createUser(db, { name: 'Adam Admin' }),
    createUser(db, { name: 'Mia Member' }),
    createUser(db, { name: 'Otto Outsider' }),
  ]);
  const orgId = await addMembership(db, owner, 'owner');
  await addMembership(db, admin, 'admin', orgId);
  await addMembership(db, member, 'member', orgId);
  // Joined a second apart, in this order (the clock alone may give them the same instant).
  for (const [index, user] of [owner, admin, member].entries()) {
    await db.sql`update members set created_at = ${new Date(Date.now() - (10 - index) * 1000)} where organization_id = ${orgId} and user_id = ${user.id}`;
  }
  const [row] = await db.sql<{ slug: string }[]>`select slug from organizations where id = ${orgId}`;
  return { orgId, slug: row!.slug, owner, admin, member, outsider };
}

export async function memberId(server: TestServer, orgId: string, user: TestUser): Promise<string> {
  const [row] = await server.db.sql<{ id: string }[]>`select id from members where organization_id = ${orgId} and user_id = ${user.id}`;
  return row!.id;
}

export interface AuditRow {
  organization_id: string | null;
  action: string;
  actor_id: string | null;
  actor_email: string | null;
  target_type: string | null;
  target_id: string | null;
  impersonated_by: string | null;
  metadata: Record<string, any> | null;
}

/** The audit entries with one of these target ids or of this organization, oldest first. */
export async function auditOf(server: TestServer, where: { organizationId?: string; targetId?: string }): Promise<AuditRow[]> {
  return server.db.sql<AuditRow[]>`
    select organization_id, action, actor_id, actor_email, target_type, target_id, impersonated_by, metadata
    from audit_log
    where ${where.organizationId ? server.db.sql`organization_id = ${where.organizationId}` : server.db.sql`target_id = ${where.targetId ?? ''}`}
    order by created_at, action`;
}

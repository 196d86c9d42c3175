/**
 * Reads of the platform admin's user operations: the user listing, and the owner rows a user's
 * removal must lock. It writes nothing: users and sessions are written by their stores
 * (src/auth/users-store.ts, src/auth/sessions-store.ts), through src/admin/user-admin.ts.
 */
import type { Sql } from '../db/connection.ts';
import type { Db } from '../db/db.ts';
import { USER_COLUMNS, type User } from '../auth/users-store.ts';

export async function listUsers(sql: Sql, options: { field: 'email' | 'name'; value: string | undefined; limit: number; offset: number }): Promise<{ users: User[]; total: number }> {
  // strpos on lower() is a plain substring test: no LIKE wildcards to escape in the search text.
  const value = options.value ?? '';
  const matches = options.field === 'name' ? sql`strpos(lower(name), lower(${value})) > 0` : sql`strpos(lower(email), lower(${value})) > 0`;
  const users = await sql<User[]>`
    select ${sql.unsafe(USER_COLUMNS)} from users where ${matches}
    order by created_at desc, id desc
    limit ${options.limit} offset ${options.offset}`;
  const [count] = await sql<{ total: number }[]>`select count(*)::int as total from users where ${matches}`;
  return { users, total: count!.total };
}

/**
 * The owners of every organization the user owns (the user among them), locked until the
 * transaction ends, so a concurrent removal or demotion of a co-owner waits.
 */
export async function lockOwnersOfOrganizationsOwnedBy(tx: Db, userId: string): Promise<{ organizationId: string; userId: string }[]> {
  return tx<{ organizationId: string; userId: string }[]>`
    select organization_id as "organizationId", user_id as "userId" from members
    where role = 'owner' and organization_id in (select organization_id from members where user_id = ${userId} and role = 'owner')
    order by id
    for update`;
}

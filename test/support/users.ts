/**
 * Test users without going through sign-up: a row in users (and a password account), plus a real
 * session token, so suites that are not about accounts can act as someone quickly.
 */
import type { Database } from '../../src/db/connection.ts';
import { newId } from '../../src/ids.ts';
import { createSession } from '../../src/auth/sessions.ts';
import { hashPassword } from '../../src/auth/passwords.ts';

export interface TestUser {
  id: string;
  email: string;
  name: string;
  /** A session token: `Authorization: Bearer <token>`. */
  token: string;
  /** Headers that sign requests in as this user. */
  headers: Record<string, string>;
}

let passwordHash: Promise<string> | undefined;
export const TEST_PASSWORD = 'correct horse battery staple';

export async function createUser(db: Database, options: { email?: string; name?: string; role?: 'admin' | null; emailVerified?: boolean; now?: Date } = {}): Promise<TestUser> {
  const id = newId('usr');
  const email = options.email ?? `${id}@example.com`;
  const name = options.name ?? 'Test User';
  const now = options.now ?? new Date();
  passwordHash ??= hashPassword(TEST_PASSWORD);
  await db.sql`insert into users (id, email, email_verified, name, role, created_at, updated_at)
               values (${id}, ${email}, ${options.emailVerified ?? true}, ${name}, ${options.role ?? null}, ${now}, ${now})`;
  await db.sql`insert into accounts (id, user_id, provider, provider_account_id, password_hash)
               values (${newId('acc')}, ${id}, 'credential', ${id}, ${await passwordHash})`;
  const { token } = await createSession(db.sql, { userId: id, now });
  return { id, email, name, token, headers: { authorization: `Bearer ${token}` } };
}

/** Makes `user` a member of a new organization (or of `organizationId`) with `role`. */
export async function addMembership(db: Database, user: TestUser, role: 'owner' | 'admin' | 'member', organizationId?: string): Promise<string> {
  const orgId = organizationId ?? newId('org');
  if (!organizationId) {
    await db.sql`insert into organizations (id, name, slug) values (${orgId}, ${'Org ' + orgId}, ${orgId.replace('_', '-').toLowerCase()})`;
  }
  await db.sql`insert into members (id, organization_id, user_id, role) values (${newId('mem')}, ${orgId}, ${user.id}, ${role})`;
  return orgId;
}

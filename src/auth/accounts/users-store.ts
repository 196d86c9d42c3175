/**
 * SQL for users and their password ('credential' account). Emails are stored as given and found
 * case-insensitively through users_email_key, the unique index on lower(email).
 */
import type { Sql } from '../../db/connection.ts';
import { ApiError } from '../../contract/errors.ts';
import { newId } from '../../ids.ts';
import type { UserRow } from '../sessions.ts';
import type { Db } from '../../db/db.ts';


export interface UserWithPassword extends UserRow {
  /** The argon2id hash, or null for a user who only signs in through a provider. */
  password_hash: string | null;
}

export async function findUserByEmail(sql: Db, email: string): Promise<UserWithPassword | null> {
  const [row] = await sql<UserWithPassword[]>`
    select u.id, u.email, u.email_verified, u.name, u.image, u.role, u.banned, u.ban_reason, u.ban_expires_at,
           u.created_at, u.updated_at, a.password_hash
    from users u left join accounts a on a.user_id = u.id and a.provider = 'credential'
    where lower(u.email) = lower(${email})`;
  return row ?? null;
}

export async function findUserById(sql: Db, id: string): Promise<UserWithPassword | null> {
  const [row] = await sql<UserWithPassword[]>`
    select u.id, u.email, u.email_verified, u.name, u.image, u.role, u.banned, u.ban_reason, u.ban_expires_at,
           u.created_at, u.updated_at, a.password_hash
    from users u left join accounts a on a.user_id = u.id and a.provider = 'credential'
    where u.id = ${id}`;
  return row ?? null;
}

/** Creates the user and its password in one transaction; a taken email (any case) is 422. */
export async function insertUserWithPassword(
  sql: Sql,
  user: { name: string; email: string; role: string; passwordHash: string; now: Date },
): Promise<UserRow> {
  try {
    return await sql.begin(async (tx) => {
      const id = newId('usr');
      const [row] = await tx<UserRow[]>`
        insert into users (id, email, email_verified, name, role, created_at, updated_at)
        values (${id}, ${user.email}, false, ${user.name}, ${user.role}, ${user.now}, ${user.now})
        returning id, email, email_verified, name, image, role, banned, ban_reason, ban_expires_at, created_at, updated_at`;
      await setPassword(tx, id, user.passwordHash, user.now);
      return row!;
    });
  } catch (error) {
    // The unique index decides, so two sign-ups racing for one address cannot both win.
    if ((error as { code?: string; constraint_name?: string }).constraint_name === 'users_email_key') {
      throw new ApiError('USER_ALREADY_EXISTS');
    }
    throw error;
  }
}

/** Sets the user's password, creating the credential account for a user who had none (reset). */
export async function setPassword(sql: Db, userId: string, passwordHash: string, now: Date): Promise<void> {
  await sql`
    insert into accounts (id, user_id, provider, provider_account_id, password_hash, created_at, updated_at)
    values (${newId('acc')}, ${userId}, 'credential', ${userId}, ${passwordHash}, ${now}, ${now})
    on conflict (provider, provider_account_id)
    do update set password_hash = excluded.password_hash, updated_at = excluded.updated_at`;
}

/**
 * Marks the address verified, only while the user still has the address the token was sent to;
 * answers false otherwise.
 */
export async function markEmailVerified(sql: Db, userId: string, email: string, now: Date): Promise<boolean> {
  const rows = await sql`
    update users set email_verified = true, updated_at = ${now}
    where id = ${userId} and lower(email) = lower(${email})
    returning id`;
  return rows.length > 0;
}

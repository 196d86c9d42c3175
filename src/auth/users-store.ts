/**
 * The users table: the only module that writes it, and where its rows become camelCase. Emails
 * are stored as given and found case-insensitively through users_email_key, the unique index on
 * lower(email).
 */
import type { Sql } from '../db/connection.ts';
import type { Db } from '../db/db.ts';
import { ApiError } from '../contract/errors.ts';
import { newId } from '../ids.ts';
import { setPassword } from './accounts-store.ts';

export interface User {
  id: string;
  email: string;
  emailVerified: boolean;
  name: string;
  image: string | null;
  /** 'admin' marks a platform administrator; anything else (or null) is an ordinary user. */
  role: string | null;
  banned: boolean;
  banReason: string | null;
  banExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface UserWithPassword extends User {
  /** The argon2id hash of the 'credential' account, or null for a user who only signs in through a provider. */
  passwordHash: string | null;
}

/**
 * Every column, camelCase. A constant list, so `unsafe` injects nothing from outside; other
 * stores that read users (admin/users-store.ts) select with it too.
 */
export const USER_COLUMNS =
  'id, email, email_verified as "emailVerified", name, image, role, banned, ban_reason as "banReason", ' + 'ban_expires_at as "banExpiresAt", created_at as "createdAt", updated_at as "updatedAt"';

/** A users row as `to_jsonb(u)` gives it: the column names, timestamps as strings. */
export interface UserJson {
  id: string;
  email: string;
  email_verified: boolean;
  name: string;
  image: string | null;
  role: User['role'];
  banned: boolean;
  ban_reason: string | null;
  ban_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A users row read as JSON (`to_jsonb(u)` in a join): timestamps come back as strings. */
export function userFromJson(row: UserJson): User {
  return {
    id: row.id,
    email: row.email,
    emailVerified: row.email_verified,
    name: row.name,
    image: row.image,
    role: row.role,
    banned: row.banned,
    banReason: row.ban_reason,
    banExpiresAt: row.ban_expires_at ? new Date(row.ban_expires_at) : null,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

export async function findUser(db: Db, id: string): Promise<User | null> {
  const [row] = await db<User[]>`select ${db.unsafe(USER_COLUMNS)} from users where id = ${id}`;
  return row ?? null;
}

/** Reads the user and locks the row until the transaction ends. */
export async function lockUser(tx: Db, id: string): Promise<User | null> {
  const [row] = await tx<User[]>`select ${tx.unsafe(USER_COLUMNS)} from users where id = ${id} for update`;
  return row ?? null;
}

/** The user with this email (any case), its row locked until the transaction ends. */
export async function lockUserByEmail(tx: Db, email: string): Promise<User | null> {
  const [row] = await tx<User[]>`select ${tx.unsafe(USER_COLUMNS)} from users where lower(email) = lower(${email}) for update`;
  return row ?? null;
}

export async function findUserWithPassword(db: Db, id: string): Promise<UserWithPassword | null> {
  const [row] = await db<UserWithPassword[]>`
    select u.*, a.password_hash as "passwordHash"
    from (select ${db.unsafe(USER_COLUMNS)} from users where id = ${id}) u
    left join accounts a on a.user_id = u.id and a.provider = 'credential'`;
  return row ?? null;
}

export async function findUserWithPasswordByEmail(db: Db, email: string): Promise<UserWithPassword | null> {
  const [row] = await db<UserWithPassword[]>`
    select u.*, a.password_hash as "passwordHash"
    from (select ${db.unsafe(USER_COLUMNS)} from users where lower(email) = lower(${email})) u
    left join accounts a on a.user_id = u.id and a.provider = 'credential'`;
  return row ?? null;
}

/** The user a provider account (GitHub user id, Google `sub`) is linked to. */
export async function findUserByAccount(db: Db, provider: string, providerAccountId: string): Promise<User | null> {
  const [row] = await db<User[]>`
    select ${db.unsafe(USER_COLUMNS)} from users
    where id = (select user_id from accounts where provider = ${provider} and provider_account_id = ${providerAccountId})`;
  return row ?? null;
}

/** Creates the user and its password in one transaction; a taken email (any case) is 422. */
export async function insertUserWithPassword(sql: Sql, user: { name: string; email: string; role: string; passwordHash: string; now: Date }): Promise<User> {
  try {
    return await sql.begin(async (tx) => {
      const id = newId('usr');
      const [row] = await tx<User[]>`
        insert into users (id, email, email_verified, name, role, created_at, updated_at)
        values (${id}, ${user.email}, false, ${user.name}, ${user.role}, ${user.now}, ${user.now})
        returning ${tx.unsafe(USER_COLUMNS)}`;
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

/**
 * A user whose email a provider vouches for (verified from the start); null when a user with the
 * email (any case) exists already, a concurrent sign-in's perhaps.
 */
export async function insertVerifiedUserUnlessEmailTaken(db: Db, user: { email: string; name: string; image: string | null; role: string | null; now: Date }): Promise<User | null> {
  const [row] = await db<User[]>`
    insert into users (id, email, email_verified, name, image, role, created_at, updated_at)
    values (${newId('usr')}, ${user.email}, true, ${user.name}, ${user.image}, ${user.role}, ${user.now}, ${user.now})
    on conflict ((lower(email))) do nothing
    returning ${db.unsafe(USER_COLUMNS)}`;
  return row ?? null;
}

/**
 * Marks the address verified, only while the user still has the address the token was sent to;
 * answers false otherwise.
 */
export async function markEmailVerified(db: Db, userId: string, email: string, now: Date): Promise<boolean> {
  const rows = await db`
    update users set email_verified = true, updated_at = ${now}
    where id = ${userId} and lower(email) = lower(${email})
    returning id`;
  return rows.length > 0;
}

/** Marks the user's current address verified, whatever it is. */
export async function setEmailVerified(db: Db, userId: string, now: Date): Promise<User | null> {
  const [row] = await db<User[]>`update users set email_verified = true, updated_at = ${now} where id = ${userId} returning ${db.unsafe(USER_COLUMNS)}`;
  return row ?? null;
}

export async function setUserRole(db: Db, userId: string, role: string, now: Date): Promise<User | null> {
  const [row] = await db<User[]>`update users set role = ${role}, updated_at = ${now} where id = ${userId} returning ${db.unsafe(USER_COLUMNS)}`;
  return row ?? null;
}

export async function setBan(db: Db, userId: string, ban: { reason: string | null; expiresAt: Date | null }, now: Date): Promise<User | null> {
  const [row] = await db<User[]>`
    update users set banned = true, ban_reason = ${ban.reason}, ban_expires_at = ${ban.expiresAt}, updated_at = ${now}
    where id = ${userId} returning ${db.unsafe(USER_COLUMNS)}`;
  return row ?? null;
}

export async function clearBan(db: Db, userId: string, now: Date): Promise<User | null> {
  const [row] = await db<User[]>`
    update users set banned = false, ban_reason = null, ban_expires_at = null, updated_at = ${now}
    where id = ${userId} returning ${db.unsafe(USER_COLUMNS)}`;
  return row ?? null;
}

/** Accounts, sessions, memberships, team memberships and tokens go with the row (on delete cascade). */
export async function deleteUser(db: Db, userId: string): Promise<void> {
  await db`delete from users where id = ${userId}`;
}

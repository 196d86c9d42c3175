/**
 * The accounts table: the only module that writes it. An account is a way to sign in as a user: the
 * password ('credential', provider_account_id = the user id) or a provider's account (GitHub,
 * Google). Reading a user with their password is users-store.ts's (findUserWithPassword).
 */
import type { Db } from '../db/db.ts';
import { newId } from '../ids.ts';

/** Sets the user's password, creating the credential account for a user who had none (reset). */
export async function setPassword(db: Db, userId: string, passwordHash: string, now: Date): Promise<void> {
  await db`
    insert into accounts (id, user_id, provider, provider_account_id, password_hash, created_at, updated_at)
    values (${newId('acc')}, ${userId}, 'credential', ${userId}, ${passwordHash}, ${now}, ${now})
    on conflict (provider, provider_account_id)
    do update set password_hash = excluded.password_hash, updated_at = excluded.updated_at`;
}

/** Removes the user's password (the credential account); a user without one is left as is. */
export async function deletePassword(db: Db, userId: string): Promise<void> {
  await db`delete from accounts where user_id = ${userId} and provider = 'credential'`;
}

/** Links a provider account to the user; an account already linked (to anyone) is left as is. */
export async function linkProviderAccount(db: Db, account: { userId: string; provider: string; providerAccountId: string; now: Date }): Promise<void> {
  await db`
    insert into accounts (id, user_id, provider, provider_account_id, created_at, updated_at)
    values (${newId('acc')}, ${account.userId}, ${account.provider}, ${account.providerAccountId}, ${account.now}, ${account.now})
    on conflict (provider, provider_account_id) do nothing`;
}

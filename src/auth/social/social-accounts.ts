/**
 * Finds or creates the user behind a provider profile, in one transaction:
 *   1. an account row for (provider, account id) signs its user in;
 *   2. else, only when the provider vouches for the email, a user with that email (any case) is
 *      linked: a new account row, and the email counts as verified from now on;
 *   3. else a new user (admin when the email is in ADMIN_EMAILS) with the account row.
 * An address the provider does not vouch for links and creates nothing.
 */
import type { TransactionSql } from 'postgres';
import type { Sql } from '../../db/connection.ts';
import { newId } from '../../ids.ts';
import type { UserRow } from '../sessions.ts';
import { announceRevocation } from '../revocations.ts';
import type { ProviderName, ProviderProfile } from './providers.ts';

export type SocialUserOutcome =
  | { user: UserRow; how: 'existing' | 'linked' | 'created' }
  | { refused: 'EMAIL_NOT_VERIFIED' };

export async function findOrCreateSocialUser(
  sql: Sql,
  options: { provider: ProviderName; profile: ProviderProfile; adminEmails: readonly string[]; now: Date },
): Promise<SocialUserOutcome> {
  const { provider, profile, now } = options;
  return sql.begin(async (tx): Promise<SocialUserOutcome> => {
    const [linked] = await tx<UserRow[]>`
      select u.* from accounts a join users u on u.id = a.user_id
      where a.provider = ${provider} and a.provider_account_id = ${profile.accountId}`;
    if (linked) return { user: linked, how: 'existing' };
    if (!profile.email || !profile.emailVerified) return { refused: 'EMAIL_NOT_VERIFIED' };

    const role = options.adminEmails.includes(profile.email.toLowerCase()) ? 'admin' : null;
    // A concurrent callback may create the same email first: then this insert yields nothing and the row is linked.
    const [created] = await tx<UserRow[]>`
      insert into users (id, email, email_verified, name, image, role, created_at, updated_at)
      values (${newId('usr')}, ${profile.email}, true, ${profile.name.slice(0, 200)}, ${profile.image}, ${role}, ${now}, ${now})
      on conflict ((lower(email))) do nothing
      returning *`;
    if (created) {
      await addAccount(tx, created.id, provider, profile.accountId, now);
      return { user: created, how: 'created' };
    }
    const [existing] = await tx<UserRow[]>`select * from users where lower(email) = lower(${profile.email}) for update`;
    if (!existing) throw new Error('the user with this email vanished while linking');
    const user = existing.email_verified ? existing : await takeOverUnverified(tx, existing, now);
    await addAccount(tx, user.id, provider, profile.accountId, now);
    return { user, how: 'linked' };
  });
}

/**
 * The provider proves who owns the address; whoever signed up with it before never did. Their
 * password and sessions go, so a stranger who registered the address first cannot keep a way into
 * the account its owner is about to use (account pre-hijacking). The owner can set a password
 * again with a reset.
 */
async function takeOverUnverified(tx: TransactionSql, user: UserRow, now: Date): Promise<UserRow> {
  await tx`delete from accounts where user_id = ${user.id} and provider = 'credential'`;
  await tx`delete from sessions where user_id = ${user.id}`;
  await announceRevocation(tx, { kind: 'user', userId: user.id });
  const [verified] = await tx<UserRow[]>`update users set email_verified = true, updated_at = ${now} where id = ${user.id} returning *`;
  return verified!;
}

async function addAccount(tx: TransactionSql, userId: string, provider: ProviderName, accountId: string, now: Date): Promise<void> {
  await tx`
    insert into accounts (id, user_id, provider, provider_account_id, created_at, updated_at)
    values (${newId('acc')}, ${userId}, ${provider}, ${accountId}, ${now}, ${now})
    on conflict (provider, provider_account_id) do nothing`;
}

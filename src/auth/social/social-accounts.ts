/**
 * Finds or creates the user behind a provider profile, in one transaction:
 *   1. an account row for (provider, account id) signs its user in;
 *   2. else, only when the provider vouches for the email, a user with that email (any case) is
 *      linked: a new account row, and the email counts as verified from now on;
 *   3. else a new user (admin when the email is in ADMIN_EMAILS) with the account row.
 * An address the provider does not vouch for links and creates nothing. The SQL is the stores'
 * (users-store.ts, accounts-store.ts, sessions-store.ts).
 */
import type { Sql } from '../../db/connection.ts';
import type { Db } from '../../db/db.ts';
import { deletePassword, linkProviderAccount } from '../accounts-store.ts';
import { endAllSessions } from '../sessions.ts';
import { findUserByAccount, insertVerifiedUserUnlessEmailTaken, lockUserByEmail, setEmailVerified, type User } from '../users-store.ts';
import type { ProviderName, ProviderProfile } from './provider.ts';

export type SocialUserOutcome = { user: User; how: 'existing' | 'linked' | 'created' } | { refused: 'EMAIL_NOT_VERIFIED' };

export async function findOrCreateSocialUser(sql: Sql, options: { provider: ProviderName; profile: ProviderProfile; adminEmails: readonly string[]; now: Date }): Promise<SocialUserOutcome> {
  const { provider, profile, now } = options;
  return sql.begin(async (tx): Promise<SocialUserOutcome> => {
    const linked = await findUserByAccount(tx, provider, profile.accountId);
    if (linked) return { user: linked, how: 'existing' };
    if (!profile.email || !profile.emailVerified) return { refused: 'EMAIL_NOT_VERIFIED' };

    const role = options.adminEmails.includes(profile.email.toLowerCase()) ? 'admin' : null;
    const account = { provider, providerAccountId: profile.accountId, now };
    // A concurrent callback may create the same email first: then this insert yields nothing and the row is linked.
    const created = await insertVerifiedUserUnlessEmailTaken(tx, { email: profile.email, name: profile.name.slice(0, 200), image: profile.image, role, now });
    if (created) {
      await linkProviderAccount(tx, { userId: created.id, ...account });
      return { user: created, how: 'created' };
    }
    const existing = await lockUserByEmail(tx, profile.email);
    if (!existing) throw new Error('the user with this email vanished while linking');
    const user = existing.emailVerified ? existing : await takeOverUnverified(tx, existing, now);
    await linkProviderAccount(tx, { userId: user.id, ...account });
    return { user, how: 'linked' };
  });
}

/**
 * The provider proves who owns the address; whoever signed up with it before never did. Their
 * password and sessions go, so a stranger who registered the address first cannot keep a way into
 * the account its owner is about to use (account pre-hijacking). The owner can set a password
 * again with a reset.
 */
async function takeOverUnverified(tx: Db, user: User, now: Date): Promise<User> {
  await deletePassword(tx, user.id);
  await endAllSessions(tx, user.id);
  const verified = await setEmailVerified(tx, user.id, now);
  return verified!;
}

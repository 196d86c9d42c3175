/**
 * Identity routes: password change, password reset and email verification (auth.changePassword
 * ... auth.verifyEmail). The routes that mail a link answer the same whether or not the address
 * has an account, and mail in the background so the response time does not tell either; the same
 * too when the address's mail budget is spent (email/outbox.ts): the mail is then not sent.
 */
import { isMailBudgetSpent, type Outbox } from '../../email/outbox.ts';
import { ApiError } from '../../contract/errors.ts';
import { type AuthContext, type AuthHandlers, signedIn } from '../../context.ts';
import { burnPasswordCheck, hashPassword, verifyPassword } from '../passwords.ts';
import { createSession, endAllSessions, sessionExpiry } from '../sessions.ts';
import { mailPasswordResetLink, mailVerificationLink } from './emails.ts';
import { absoluteTarget, checkRedirectTarget, withQuery } from '../redirect-targets.ts';
import { setPassword } from '../accounts-store.ts';
import { findUserWithPassword, findUserWithPasswordByEmail, markEmailVerified } from '../users-store.ts';
import { findUsableToken, spendToken, spendUserTokens } from './verification-tokens.ts';
import { toUser } from '../views.ts';

export const accountRoutes = {
  async 'auth.changePassword'(input, ctx) {
    const principal = signedIn(ctx);
    const { sql } = ctx.services.db;
    const user = await findUserWithPassword(sql, principal.userId);
    if (!user) throw new ApiError('UNAUTHORIZED');
    // A provider-only user has no password to check; the answer is the same as for a wrong one.
    if (user.passwordHash === null) {
      await burnPasswordCheck(input.currentPassword);
      throw new ApiError('INVALID_EMAIL_OR_PASSWORD');
    }
    if (!(await verifyPassword(user.passwordHash, input.currentPassword))) throw new ApiError('INVALID_EMAIL_OR_PASSWORD');
    const passwordHash = await hashPassword(input.newPassword);
    const now = ctx.services.now();
    await sql.begin(async (tx) => {
      await setPassword(tx, user.id, passwordHash, now);
      // A reset link mailed before the change would otherwise still set a password.
      await spendUserTokens(tx, user.id, 'password-reset', now);
      if (input.revokeOtherSessions) await endAllSessions(tx, user.id);
    });
    if (!input.revokeOtherSessions) return { body: { token: null, user: toUser(user, now) } };

    // Every session went, this one too: the client gets a fresh token. An impersonation stays one.
    const { token, session } = await createSession(sql, { userId: user.id, now, ip: ctx.ip, userAgent: ctx.userAgent, impersonatedBy: principal.impersonatedBy });
    return { body: { token, user: toUser(user, now) }, session: { token, expiresAt: sessionExpiry(session) } };
  },

  async 'auth.requestPasswordReset'(input, ctx) {
    checkRedirectTarget(ctx.services.config, 'redirectTo', input.redirectTo);
    const mailer = requireMailer(ctx);
    const user = await findUserWithPasswordByEmail(ctx.services.db.sql, input.email);
    inBackground(ctx, 'password reset email', user, async () => {
      // Counted whether or not the address has an account: the budget's state, which an
      // invitation's 429 shows, must not tell which addresses have one.
      const slot = await mailer.reserve(input.email);
      if (user) await mailPasswordResetLink(ctx.services, slot, user, input.redirectTo);
    });
    return { body: { status: true } };
  },

  async 'auth.resetPassword'(input, ctx) {
    const { sql } = ctx.services.db;
    const now = ctx.services.now();
    const token = await findUsableToken(sql, input.token, 'password-reset', now);
    if (!token) throw new ApiError('INVALID_TOKEN');
    const passwordHash = await hashPassword(input.newPassword);
    const done = await sql.begin(async (tx) => {
      if (!(await spendToken(tx, token, now))) return false;
      await setPassword(tx, token.userId, passwordHash, now);
      await spendUserTokens(tx, token.userId, 'password-reset', now);
      // The link reached the mailbox, which is all a verification link proves.
      await markEmailVerified(tx, token.userId, token.email, now);
      // Whoever knew the old password is signed out everywhere.
      await endAllSessions(tx, token.userId);
      return true;
    });
    if (!done) throw new ApiError('INVALID_TOKEN');
    return { body: { status: true } };
  },

  async 'auth.sendVerificationEmail'(input, ctx) {
    checkRedirectTarget(ctx.services.config, 'callbackURL', input.callbackURL);
    const mailer = requireMailer(ctx);
    const user = await findUserWithPasswordByEmail(ctx.services.db.sql, input.email);
    inBackground(ctx, 'verification email', user, async () => {
      // Counted for every address, as a password reset is (above).
      const slot = await mailer.reserve(input.email);
      if (user && !user.emailVerified) await mailVerificationLink(ctx.services, slot, user, input.callbackURL);
    });
    return { body: { status: true } };
  },

  async 'auth.verifyEmail'(input, ctx) {
    const { config } = ctx.services;
    checkRedirectTarget(config, 'callbackURL', input.callbackURL);
    const verified = await consumeVerificationToken(ctx, input.token);
    if (input.callbackURL !== undefined) {
      const target = absoluteTarget(config, input.callbackURL);
      return { redirect: verified ? target : withQuery(target, { error: 'INVALID_TOKEN' }) };
    }
    if (!verified) throw new ApiError('INVALID_TOKEN');
    return { body: { status: true } };
  },
} satisfies AuthHandlers;

function requireMailer(ctx: AuthContext): Outbox {
  if (!ctx.services.mailer) throw new ApiError('PRECONDITION_FAILED', { message: 'No email provider is configured.' });
  return ctx.services.mailer;
}

/**
 * Runs `send` after the answer; a failure is logged (the client was told nothing either way), and
 * so is a mail the recipient's budget refused (email/outbox.ts): the answer stays the same.
 */
function inBackground(ctx: AuthContext, what: string, user: { id: string } | null, send: () => Promise<void>): void {
  send().catch((error: unknown) => {
    if (isMailBudgetSpent(error)) ctx.log.warn({ userId: user?.id ?? null, retryAfter: error.headers['Retry-After'] }, `${what} not sent: the recipient's mail budget is spent`);
    else ctx.log.error({ err: error }, `${what} could not be sent`);
  });
}

/** True when the token was valid and the address is now verified; the token is spent either way. */
async function consumeVerificationToken(ctx: AuthContext, presented: string): Promise<boolean> {
  const { sql } = ctx.services.db;
  const now = ctx.services.now();
  const token = await findUsableToken(sql, presented, 'email-verification', now);
  if (!token) return false;
  return sql.begin(async (tx) => {
    if (!(await spendToken(tx, token, now))) return false;
    // The user may have another address by now; a link to the old one verifies nothing.
    if (!(await markEmailVerified(tx, token.userId, token.email, now))) return false;
    await spendUserTokens(tx, token.userId, 'email-verification', now);
    return true;
  });
}

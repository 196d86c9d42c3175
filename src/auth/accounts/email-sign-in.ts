/**
 * auth.signUpEmail and auth.signInEmail: an account made of an email address and an argon2id
 * password, and the session that signs it in.
 */
import { ApiError } from '../../contract/errors.ts';
import type { AuthHandlers } from '../../context.ts';
import { burnPasswordCheck, hashPassword, verifyPassword } from '../passwords.ts';
import { createSession, isBanned, sessionExpiry } from '../sessions.ts';
import { mailVerificationLink } from './emails.ts';
import { isMailBudgetSpent } from '../../email/outbox.ts';
import { checkRedirectTarget } from '../redirect-targets.ts';
import { findUserWithPasswordByEmail, insertUserWithPassword } from '../users-store.ts';
import { refusal, signInKey } from '../rate-limit.ts';
import { toUser } from '../views.ts';

export const emailSignInRoutes = {
  async 'auth.signUpEmail'(input, ctx) {
    const { config, db, mailer } = ctx.services;
    checkRedirectTarget(config, 'callbackURL', input.callbackURL);
    if (config.requireEmailVerification && !mailer) {
      throw new ApiError('PRECONDITION_FAILED', { message: 'Email verification is required, but no email provider is configured.' });
    }
    const passwordHash = await hashPassword(input.password);
    const now = ctx.services.now();
    const role = config.adminEmails.includes(input.email.toLowerCase()) ? 'admin' : 'user';
    const user = await insertUserWithPassword(db.sql, { name: input.name, email: input.email, role, passwordHash, now });

    if (mailer) {
      // Best effort: the account exists either way, and send-verification-email can mail a new link
      // (also once the address's mail budget, email/outbox.ts, has room again).
      try {
        await mailVerificationLink(ctx.services, await mailer.reserve(user.email), user, input.callbackURL);
      } catch (error) {
        if (isMailBudgetSpent(error)) ctx.log.warn({ userId: user.id }, "verification email not sent: the recipient's mail budget is spent");
        else ctx.log.error({ err: error, userId: user.id }, 'verification email could not be sent');
      }
    }
    if (config.requireEmailVerification) return { body: { token: null, user: toUser(user, now) } };

    const { token, session } = await createSession(db.sql, { userId: user.id, now, ip: ctx.ip, userAgent: ctx.userAgent });
    return { body: { token, user: toUser(user, now) }, session: { token, expiresAt: sessionExpiry(session) } };
  },

  async 'auth.signInEmail'(input, ctx) {
    const { config, db, limiters } = ctx.services;
    // On top of the identity limiter: per client address, and per (email, address). Not per email
    // alone, or anyone could lock an account's owner out by guessing from somewhere else.
    const attempt =
      (await refusal(limiters.signInAddress, ctx.ip, 'Too many sign-in attempts from this address, try again later.')) ??
      (await refusal(limiters.signInEmail, signInKey(input.email, ctx.ip), 'Too many sign-in attempts for this email address, try again later.'));
    if (attempt) throw attempt;
    const user = await findUserWithPasswordByEmail(db.sql, input.email);
    // An unknown address costs one password check too, so timing does not tell which addresses have accounts.
    if (!user || user.passwordHash === null) {
      await burnPasswordCheck(input.password);
      throw new ApiError('INVALID_EMAIL_OR_PASSWORD');
    }
    if (!(await verifyPassword(user.passwordHash, input.password))) throw new ApiError('INVALID_EMAIL_OR_PASSWORD');
    // Only after the password is right, so these answers reveal nothing to someone who does not know it.
    const now = ctx.services.now();
    if (isBanned(user, now)) throw new ApiError('BANNED_USER');
    if (config.requireEmailVerification && !user.emailVerified) throw new ApiError('EMAIL_NOT_VERIFIED');

    const { token, session } = await createSession(db.sql, { userId: user.id, now, ip: ctx.ip, userAgent: ctx.userAgent });
    return { body: { token, user: toUser(user, now) }, session: { token, expiresAt: sessionExpiry(session) } };
  },
} satisfies AuthHandlers;

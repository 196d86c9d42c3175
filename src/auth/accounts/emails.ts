/**
 * The two emails the account routes send, and how their links are made. Each link carries a
 * fresh single-use token (verification-tokens.ts) that lives one hour.
 */
import type { Config } from '../../config.ts';
import type { Sql } from '../../db/connection.ts';
import type { MailMessage } from '../../email/mailer.ts';
import type { MailSlot } from '../../email/outbox.ts';
import { inlineName } from '../../email/user-text.ts';
import type { User } from '../users-store.ts';
import { absoluteTarget, withQuery } from '../redirect-targets.ts';
import { issueEmailToken } from './verification-tokens.ts';

/** What mailing a link needs of the services (src/context.ts's Services). */
export interface LinkServices {
  config: Pick<Config, 'publicUrl'>;
  db: { sql: Sql };
  now: () => Date;
}

/** `name` is the account's, chosen by whoever signed up with the address (not always its owner). */
export function verificationMessage(to: string, name: string, link: string): MailMessage {
  return {
    to,
    subject: 'Verify your email address',
    text: [
      `Hello ${inlineName(name)},`,
      '',
      'Please confirm that this is your email address by opening this link:',
      '',
      link,
      '',
      'The link works once and expires in 1 hour. If you did not create an account, you can ignore this email.',
      '',
    ].join('\n'),
  };
}

export function passwordResetMessage(to: string, name: string, link: string): MailMessage {
  return {
    to,
    subject: 'Reset your password',
    text: [
      `Hello ${inlineName(name)},`,
      '',
      'Someone (hopefully you) asked to reset the password of your account. To choose a new password, open this link:',
      '',
      link,
      '',
      'The link works once and expires in 1 hour. Once the password is reset, every device is signed out.',
      'If you did not ask for this, ignore this email: your password stays as it is.',
      '',
    ].join('\n'),
  };
}

/**
 * Issues a verification token and mails the link to GET /api/auth/verify-email, in `slot`: a mail
 * already counted against the address's budget (email/outbox.ts), so a refused one made no token.
 */
export async function mailVerificationLink(services: LinkServices, slot: MailSlot, user: User, callbackURL: string | undefined): Promise<void> {
  const token = await issueEmailToken(services.db.sql, { purpose: 'email-verification', userId: user.id, email: user.email, now: services.now() });
  const params: Record<string, string> = { token };
  if (callbackURL !== undefined) params.callbackURL = callbackURL;
  const link = withQuery(`${services.config.publicUrl}/api/auth/verify-email`, params);
  await slot.send(verificationMessage(user.email, user.name, link));
}

/**
 * Issues a reset token and mails a link to the client's page (`redirectTo`, with `token` in its
 * query), or, without one, to the API's reset route with the token; in `slot`, as above.
 */
export async function mailPasswordResetLink(services: LinkServices, slot: MailSlot, user: User, redirectTo: string | undefined): Promise<void> {
  const token = await issueEmailToken(services.db.sql, { purpose: 'password-reset', userId: user.id, email: user.email, now: services.now() });
  const page = redirectTo === undefined ? `${services.config.publicUrl}/api/auth/reset-password` : absoluteTarget(services.config, redirectTo);
  await slot.send(passwordResetMessage(user.email, user.name, withQuery(page, { token })));
}

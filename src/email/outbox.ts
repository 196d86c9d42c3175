/**
 * Every mail the service sends goes through here (Services.mailer), and each one counts against
 * its recipient's budget first: at most MAIL_PER_RECIPIENT_LIMIT mails to one address per
 * MAIL_PER_RECIPIENT_WINDOW_MINUTES, whatever the kind (invitation, re-sent invitation,
 * verification link, password-reset link) and whoever asked for it (issue 40: one signed-in user
 * could mail an address 100 times a minute by re-sending an invitation). The budget is one of the
 * app's limiters (`mail.recipient`), so on a database server every API instance counts in the
 * same row of `rate_limits` (auth/shared-rate-limit.ts).
 *
 * The operator's own contact address (CONTACT_EMAIL, where contact.send forwards messages) is the
 * one recipient no request chooses: it has no per-recipient budget, contact.send's per-address
 * limit bounds it.
 */
import { ApiError } from '../contract/errors.ts';
import type { Mailer, MailMessage } from './mailer.ts';

/** The recipients' budget: one of the app's limiters (auth/rate-limit.ts's RateLimiter, which this layer does not import). */
export interface RecipientBudget {
  hit(key: string): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }>;
}

export interface Outbox {
  /**
   * Counts one mail to `message.to` against its budget and sends it; throws the 429
   * (`MailBudgetSpent`, with Retry-After) and sends nothing when the budget is spent.
   */
  send(message: MailMessage): Promise<void>;
  /**
   * Counts one mail to `to` now, for a mail sent later (after a commit): throws the 429 when the
   * budget is spent, else answers the one send that the count paid for.
   */
  reserve(to: string): Promise<MailSlot>;
}

/** A mail already counted against its recipient's budget. */
export interface MailSlot {
  /** Sends `message`, whose `to` must be the reserved address. */
  send(message: MailMessage): Promise<void>;
}

export const MAIL_BUDGET_MESSAGE = 'Too many emails to this address, try again later.';

/** The 429 of a spent recipient budget: a send that throws it sent nothing. */
export type MailBudgetSpent = ApiError<'TOO_MANY_REQUESTS'>;

export function isMailBudgetSpent(error: unknown): error is MailBudgetSpent {
  return error instanceof ApiError && error.code === 'TOO_MANY_REQUESTS';
}

/** The budget's key of an address: addresses compare case-insensitively, as accounts' do. */
export function recipientKey(address: string): string {
  return address.trim().toLowerCase();
}

export function createOutbox(options: { mailer: Mailer; budget: RecipientBudget; operatorAddress: string | undefined }): Outbox {
  const { mailer, budget } = options;
  const operator = options.operatorAddress === undefined ? undefined : recipientKey(options.operatorAddress);

  async function reserve(to: string): Promise<MailSlot> {
    const key = recipientKey(to);
    if (key !== operator) {
      const decision = await budget.hit(key);
      if (!decision.allowed) throw new ApiError('TOO_MANY_REQUESTS', { message: MAIL_BUDGET_MESSAGE, headers: { 'Retry-After': String(decision.retryAfterSeconds) } });
    }
    let used = false;
    return {
      async send(message) {
        if (recipientKey(message.to) !== key) throw new Error('a mail slot sends only to the address it was reserved for');
        if (used) throw new Error('a mail slot sends one mail');
        used = true;
        await mailer.send(message);
      },
    };
  }

  return {
    reserve,
    async send(message) {
      await (await reserve(message.to)).send(message);
    },
  };
}

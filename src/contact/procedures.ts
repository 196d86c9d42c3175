/**
 * contact.send: the public contact form. It needs a contact address and an email provider; until
 * both are configured it answers 412. A filled `website` field is the honeypot bots fall into: the
 * answer is the same `{ ok: true }`, and nothing is sent.
 */
import type { Handlers } from '../context.ts';
import { ApiError } from '../contract/errors.ts';
import { refusal } from '../auth/rate-limit.ts';
import { inlineName } from '../email/user-text.ts';

export const contactProcedures = {
  'contact.send': async (input, ctx) => {
    const { contactEmail } = ctx.services.config;
    const mailer = ctx.services.mailer;
    if (!contactEmail || !mailer) {
      throw new ApiError('PRECONDITION_FAILED', { message: 'The contact form is not configured on this deployment.' });
    }
    const refused = await refusal(ctx.services.limiters.contact, ctx.ip, 'Too many messages, try again later.');
    if (refused) throw refused;
    if (input.website) {
      ctx.log.info({ honeypot: true }, 'contact form submission dropped');
      return { ok: true };
    }
    await mailer.send({
      to: contactEmail,
      replyTo: input.name ? { name: input.name, address: input.email } : input.email,
      subject: `Contact form: ${inlineName(input.name ?? input.email)}`,
      text: input.message,
    });
    return { ok: true };
  },
} satisfies Handlers;

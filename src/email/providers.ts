/**
 * Email providers (EMAIL_PROVIDER): `smtp` sends through nodemailer to SMTP_URL; `log` writes
 * each message to the log, for development (the links in it work); `none` sends nothing, and
 * features that need mail answer 412. nodemailer is loaded with the first mail, not at start
 * (tens of milliseconds of every start otherwise, bench/start.ts); config.ts has checked SMTP_URL.
 */
import type { Transporter } from 'nodemailer';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Mailer, MailMessage } from './mailer.ts';

export function createMailer(config: Pick<Config, 'emailProvider' | 'smtpUrl' | 'emailFrom'>, logger: Logger): Mailer | null {
  switch (config.emailProvider) {
    case 'none':
      return null;
    case 'log':
      return {
        async send(message) {
          logger.info({ email: { from: config.emailFrom, ...message } }, 'email (log provider, not sent)');
        },
      };
    case 'smtp': {
      let transport: Promise<Transporter> | undefined;
      return {
        async send(message: MailMessage) {
          transport ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(config.smtpUrl));
          await (await transport).sendMail({ from: config.emailFrom, to: message.to, subject: message.subject, text: message.text, ...(message.replyTo ? { replyTo: message.replyTo } : {}) });
        },
      };
    }
  }
}

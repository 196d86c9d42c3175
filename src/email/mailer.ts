/** What the service needs from an email provider (see providers.ts: smtp, log). */
export interface MailAddress {
  name: string;
  address: string;
}

export interface MailMessage {
  to: string;
  replyTo?: string | MailAddress;
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

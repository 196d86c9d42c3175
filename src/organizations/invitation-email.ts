/**
 * The invitation email. There is no web page behind it yet, so it tells the invitee how to
 * accept through the API: sign in with the invited address, then POST the invitation id to the
 * accept route (or the reject route).
 */
import type { MailMessage } from '../email/mailer.ts';

export interface InvitationEmail {
  to: string;
  invitationId: string;
  organizationName: string;
  inviterName: string;
  role: string;
  expiresAt: Date;
  publicUrl: string;
}

export function invitationEmail(options: InvitationEmail): MailMessage {
  const organization = oneLine(options.organizationName);
  const inviter = oneLine(options.inviterName);
  const acceptUrl = `${options.publicUrl}/api/auth/organization/accept-invitation`;
  const rejectUrl = `${options.publicUrl}/api/auth/organization/reject-invitation`;
  const body = JSON.stringify({ invitationId: options.invitationId });
  return {
    to: options.to,
    subject: `${inviter} invited you to join ${organization}`,
    text: [
      `${inviter} invited you to join ${organization} as ${options.role}.`,
      '',
      `To accept, sign in (or sign up) with this email address (${options.to}), verify it, then send`,
      `  POST ${acceptUrl}`,
      `  ${body}`,
      '',
      `To decline, send the same body to ${rejectUrl}.`,
      '',
      `Invitation id: ${options.invitationId}`,
      `The invitation expires at ${options.expiresAt.toISOString()}.`,
      'If you did not expect this invitation, you can ignore this email.',
    ].join('\n'),
  };
}

/** Names come from users; keep them from breaking the subject line or the layout. */
function oneLine(value: string): string {
  return value
    .replace(/[\p{Cc}\u2028\u2029]+/gu, ' ')
    .trim()
    .slice(0, 100);
}

/**
 * The invitation email. There is no web page behind it yet, so it tells the invitee how to
 * accept through the API: sign in with the invited address, then POST the invitation id to the
 * accept route (or the reject route).
 */
import type { MailMessage } from '../email/mailer.ts';
import { inlineName } from '../email/user-text.ts';

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
  // Both names were chosen by users the invitee may not know (email/user-text.ts).
  const organization = inlineName(options.organizationName);
  const inviter = inlineName(options.inviterName);
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

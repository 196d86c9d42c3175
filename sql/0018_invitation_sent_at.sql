-- 0018: when an invitation was last mailed (issue 40). inviteMember's `resend: true` waits
-- INVITATION_RESEND_COOLDOWN_SECONDS after it (429 with Retry-After), on every API instance alike:
-- the organization's row lock serializes the check and the write. Set in the transaction that
-- creates or re-sends the invitation, put back when the mail could not be sent. Null: not known
-- to have been mailed (a row of an earlier release, or a send that failed), so no cooldown.
--
-- Only additions (docs/migrations.md): a nullable column without a default (no rewrite, no scan).
-- The previous release neither reads nor writes it.
alter table invitations add column sent_at timestamptz;

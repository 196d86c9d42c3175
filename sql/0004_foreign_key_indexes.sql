-- An index for every foreign key that had none. Deleting or updating a referenced row (a user, a
-- team) makes PostgreSQL find the referencing rows; without an index on the key, that scans the
-- whole referencing table, once per deleted row, while holding locks. The lookups by these
-- columns (a user's team memberships, a team's workspaces and invitations) scan without one too.
-- test/db/foreign-key-indexes.test.ts fails for any foreign key, here or in a later migration,
-- that no index leads with.
--
-- Plain CREATE INDEX, as migrations run in a transaction: it blocks writes to the table while it
-- builds, which is brief at today's sizes. On a large table, build it with CREATE INDEX
-- CONCURRENTLY by hand first; `if not exists` then skips it here.

-- Deleting a user: the sessions they opened while impersonating go (on delete cascade).
create index if not exists sessions_impersonated_by on sessions (impersonated_by);
-- Deleting a user (cascade) and removing a member from an organization's teams.
create index if not exists team_members_user_id on team_members (user_id);
-- Deleting a user: their documents keep existing without an uploader (on delete set null).
create index if not exists documents_uploaded_by on documents (uploaded_by);
-- Deleting a team: its workspaces and pending invitations stay without one (on delete set null).
create index if not exists workspaces_team_id on workspaces (team_id);
create index if not exists invitations_team_id on invitations (team_id);
-- Deleting a user: the invitations they sent lose their inviter (on delete set null).
create index if not exists invitations_inviter_id on invitations (inviter_id);

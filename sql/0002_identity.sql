-- Identity: users and their sign-in accounts, sessions, one-time tokens, organizations with
-- members, invitations and teams, the audit log, and subscriptions (whose liveness guards
-- organization deletion; the billing work fills them from the payment provider).
-- Ids are opaque random strings with a kind prefix (usr_, org_, ...), made by src/ids.ts.

create table users (
  id text primary key,
  email text not null,
  email_verified boolean not null default false,
  name text not null,
  image text,
  -- 'admin' marks a platform administrator; anything else (or null) is an ordinary user.
  role text,
  banned boolean not null default false,
  ban_reason text,
  ban_expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- Emails are unique regardless of case: Ada@Example.com and ada@example.com are one person.
create unique index users_email_key on users (lower(email));

-- How a user signs in: 'credential' (email and password, argon2id hash) or an OAuth provider.
create table accounts (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  provider text not null,
  provider_account_id text not null,
  password_hash text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (provider, provider_account_id)
);
create index accounts_user_id on accounts (user_id);

-- Lucia's session design: the token is "<id>.<secret>"; only the id and SHA-256(secret) are kept.
create table sessions (
  id text primary key,
  secret_hash bytea not null,
  user_id text not null references users (id) on delete cascade,
  created_at timestamptz not null default now(),
  -- Refreshed at most hourly; the session ends after 7 days without activity.
  last_verified_at timestamptz not null default now(),
  -- The absolute cap (30 days; 1 hour for impersonation).
  expires_at timestamptz not null,
  ip_address text,
  user_agent text,
  impersonated_by text references users (id) on delete cascade
);
create index sessions_user_id on sessions (user_id);

-- Single-use tokens sent by email (verification, password reset), stored hashed.
create table verification_tokens (
  id text primary key,
  token_hash bytea not null,
  purpose text not null check (purpose in ('email-verification', 'password-reset')),
  user_id text not null references users (id) on delete cascade,
  email text not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index verification_tokens_user_id on verification_tokens (user_id);

create table organizations (
  id text primary key,
  name text not null,
  slug text not null unique,
  logo text,
  metadata jsonb,
  payment_customer_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table members (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  user_id text not null references users (id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  unique (organization_id, user_id)
);
create index members_user_id on members (user_id);

create table teams (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  name text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index teams_organization_id on teams (organization_id);

create table team_members (
  id text primary key,
  team_id text not null references teams (id) on delete cascade,
  user_id text not null references users (id) on delete cascade,
  created_at timestamptz not null default now(),
  unique (team_id, user_id)
);

create table invitations (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  email text not null,
  role text not null check (role in ('owner', 'admin', 'member')),
  team_id text references teams (id) on delete set null,
  status text not null default 'pending' check (status in ('pending', 'accepted', 'rejected', 'canceled')),
  inviter_id text references users (id) on delete set null,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index invitations_organization_id on invitations (organization_id);
create index invitations_email on invitations (lower(email));

-- Organization entries are removed with their organization. Platform-level entries (user
-- administration, an organization's deletion itself) have no organization and survive it.
create table audit_log (
  id text primary key,
  organization_id text references organizations (id) on delete cascade,
  action text not null,
  actor_id text,
  actor_email text,
  target_type text,
  target_id text,
  impersonated_by text,
  metadata jsonb,
  created_at timestamptz not null default now()
);
create index audit_log_page on audit_log (organization_id, created_at desc, id desc);

create table subscriptions (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  plan text not null,
  status text not null check (status in ('active', 'canceled', 'incomplete', 'incomplete_expired', 'past_due', 'paused', 'trialing', 'unpaid')),
  seats integer,
  period_start timestamptz,
  period_end timestamptz,
  trial_end timestamptz,
  cancel_at_period_end boolean not null default false,
  cancel_at timestamptz,
  billing_interval text,
  payment_subscription_id text unique,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index subscriptions_organization_id on subscriptions (organization_id);

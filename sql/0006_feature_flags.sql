-- Feature flags (admin.flags.*, system.flags): a global default per key, and per-organization
-- overrides that win over it. Flags are platform rows; an override goes with its flag and with
-- its organization.

create table feature_flags (
  key text primary key check (key ~ '^[a-z0-9][a-z0-9._-]*$' and length(key) between 2 and 64),
  description text not null default '',
  enabled boolean not null default false,
  created_at timestamptz not null default now(),
  -- Also moves when one of the flag's overrides changes (the contract's updatedAt).
  updated_at timestamptz not null default now()
);

create table feature_flag_overrides (
  flag_key text not null references feature_flags (key) on delete cascade,
  organization_id text not null references organizations (id) on delete cascade,
  enabled boolean not null,
  created_at timestamptz not null default now(),
  primary key (flag_key, organization_id)
);
-- The primary key serves the flag side; deleting an organization needs this one.
create index feature_flag_overrides_organization_id on feature_flag_overrides (organization_id);

-- Also here: the queue's counts by status (admin.system.status, GET /metrics on every scrape)
-- read this index instead of scanning every job ever run.
create index jobs_status on jobs (status, created_at);

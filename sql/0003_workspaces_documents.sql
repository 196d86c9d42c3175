-- Workspaces of an organization, and the documents they hold. A document's bytes live in the
-- storage driver under the key "<organization_id>/<id>"; this row is its metadata.

create table workspaces (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  -- A removed team leaves its workspaces without one.
  team_id text references teams (id) on delete set null,
  name text not null,
  slug text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (organization_id, slug)
);

create table documents (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  workspace_id text not null references workspaces (id) on delete cascade,
  uploaded_by text references users (id) on delete set null,
  name text not null,
  content_type text not null,
  -- The declared size until documents.complete rewrites it with what the driver measured.
  size bigint not null check (size >= 0),
  status text not null default 'pending' check (status in ('pending', 'ready')),
  extracted_characters integer,
  extracted_pages integer,
  extracted_at timestamptz,
  indexed_at timestamptz,
  chunk_count integer,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
-- documents.list pages newest first by (created_at, id) within a workspace.
create index documents_page on documents (workspace_id, created_at desc, id desc);
create index documents_organization_id on documents (organization_id);

-- Jobs, the AI-credit ledger, extracted text, indexed chunks and the job event log.
-- pg-boss (its own schema, `pgboss`) carries the work; the rows here are what clients see.

create table jobs (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  -- A deleted workspace or document leaves the job's history (and what it was charged) behind.
  workspace_id text references workspaces (id) on delete set null,
  document_id text references documents (id) on delete set null,
  kind text not null check (kind in ('document.extract', 'document.index', 'text.embed')),
  status text not null default 'queued' check (status in ('queued', 'running', 'succeeded', 'failed', 'canceled')),
  -- What the caller sent (text.embed: { texts }; a retry: { retryOf }); shown once the job is finished.
  input jsonb not null default '{}',
  result jsonb,
  error_message text,
  credits integer not null check (credits >= 0),
  -- How many times a worker started it.
  attempt integer not null default 0,
  retry_of text references jobs (id) on delete set null,
  created_by text references users (id) on delete set null,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz not null default now()
);
-- jobs.list pages newest first by (created_at, id) within an organization.
create index jobs_page on jobs (organization_id, created_at desc, id desc);
create index jobs_workspace_id on jobs (workspace_id);
create index jobs_document_id on jobs (document_id);
create index jobs_retry_of on jobs (retry_of);
create index jobs_created_by on jobs (created_by);

-- AI credits: a charge is a positive amount, a refund a negative one. The credits spent in a
-- period are the sum of its rows; writers lock the organization's row first (credits.ts), so
-- concurrent charges cannot pass a limit together. The job reference is checked at commit: a
-- charge comes before its job row, so the organization lock is the transaction's first lock
-- (inserting the job first would take a key-share lock on the organization that two charges
-- then each wait on: a deadlock).
create table credit_ledger (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  job_id text references jobs (id) on delete set null deferrable initially deferred,
  amount integer not null,
  reason text not null check (reason in ('job.create', 'job.retry', 'job.cancel', 'search')),
  created_at timestamptz not null default now()
);
create index credit_ledger_period on credit_ledger (organization_id, created_at);
create index credit_ledger_job_id on credit_ledger (job_id);

-- The text of a document's last successful extraction (documents.text).
create table document_texts (
  document_id text primary key references documents (id) on delete cascade,
  organization_id text not null references organizations (id) on delete cascade,
  text text not null,
  characters integer not null,
  pages integer,
  extracted_at timestamptz not null
);
create index document_texts_organization_id on document_texts (organization_id);

-- Chunks of indexed documents with their embeddings, searched by cosine distance within a
-- workspace (documents.search). Re-indexing a document replaces its chunks.
create table document_chunks (
  id text primary key,
  organization_id text not null references organizations (id) on delete cascade,
  workspace_id text not null references workspaces (id) on delete cascade,
  document_id text not null references documents (id) on delete cascade,
  index integer not null,
  text text not null,
  embedding vector(384) not null,
  created_at timestamptz not null default now(),
  unique (document_id, index)
);
create index document_chunks_organization_id on document_chunks (organization_id);
create index document_chunks_workspace_id on document_chunks (workspace_id);
create index document_chunks_embedding on document_chunks using hnsw (embedding vector_cosine_ops);

-- Job activity for jobs.stream, stored so a stream on any API instance sees a worker anywhere.
-- The id is the SSE event id. Writers take one transaction-scoped advisory lock before inserting
-- (events.ts), so ids become visible in increasing order and a reader that has seen id N never
-- later finds a smaller one. Rows are pruned after the retention window (at least 24 hours).
create table job_events (
  id bigserial primary key,
  organization_id text not null references organizations (id) on delete cascade,
  workspace_id text,
  job_id text not null,
  -- json, not jsonb: the event goes out exactly as written, fields in the contract's order.
  data json not null,
  created_at timestamptz not null default now()
);
create index job_events_organization on job_events (organization_id, id);
create index job_events_created_at on job_events (created_at);

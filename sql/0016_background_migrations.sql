-- 0016: background migrations (docs/migrations.md, "Backfills"). A data change that visits every
-- row of a large table does not belong in a migration, whose locks it would hold for minutes: the
-- workers make it in small batches, each a short transaction, throttled, resumable after a crash
-- or a restart from where the last batch ended. One row per background migration records where it
-- is; admin.system.status shows it. A new table: no lock on anything that serves traffic.
create table background_migrations (
  -- The migration's name in code (jobs/background-migrations.ts), fixed forever.
  name text primary key,
  state text not null default 'running' check (state in ('running', 'succeeded')),
  -- The key of the last row a batch visited (keyset order); null before the first batch.
  cursor text,
  -- Rows visited so far, and the table's rows when it started: its progress.
  rows_done bigint not null default 0,
  rows_total bigint not null default 0,
  batches integer not null default 0,
  -- The last batch that failed (a lock it could not take in time, a lost connection); retried.
  last_error text,
  started_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz
);

-- 0010: limits that hold across API instances. On a database server the request limiters
-- (per-IP, identity, sign-in, contact form, search) and the jobs.stream cap are kept here, so N
-- instances together allow what one allows (src/auth/shared-rate-limit.ts, src/jobs/stream-leases.ts);
-- the embedded database serves one process, which keeps them in memory and leaves these empty.
--
-- Both tables are unlogged: a count or a lease is worth less than the WAL its every change would
-- write, and a crash (or a failover to a replica) that empties them only resets the limits.
-- Expired rows are deleted by the hourly sweeper (src/auth/expired-sweeper.ts); until then they
-- are ignored.

-- One fixed window per limiter and key, started by the key's first hit after the previous window
-- ended (as the in-memory limiter does). A hit is one statement: insert, or on conflict count one
-- more in the current window, or start a new window when it has ended; `returning` tells the
-- caller whether the hit is within the limit.
create unlogged table rate_limits (
  limiter text not null,
  key text not null,
  count integer not null,
  resets_at timestamptz not null,
  primary key (limiter, key)
);

-- One row per open jobs.stream, refreshed by its instance while the stream is open and deleted
-- when it ends; a row whose instance died expires at expires_at. Opening takes a per-user
-- advisory lock, then inserts only while fewer than five of the user's rows are unexpired.
create unlogged table stream_leases (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  -- The API instance that holds the stream (for the logs and for looking around; nothing joins on it).
  instance_id text not null,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
-- Counting a user's open streams; also serves the foreign key.
create index stream_leases_user_id on stream_leases (user_id, expires_at);

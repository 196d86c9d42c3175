-- 0011: idempotent retries (docs/idempotency.md). The operations that declare the Idempotency-Key
-- header keep their first answer per caller and key for 24 hours, and replay it to a retry.
--
-- The database makes the key safe under concurrency: a request first inserts its row (the primary
-- key lets one insert win), then does the work, then writes the answer into the row it holds. A
-- second request with the same key finds the row: answered (a replay), or still running (409).
-- Only src/idempotency/store.ts writes this table; the rules are in src/idempotency/.
--
-- A logged table, unlike rate_limits: losing these rows in a crash would let a retry do its work twice.
create table idempotency_keys (
  -- Who sent the key: 'user:<user id>' when signed in, else 'ip:<client address>' (contact.send).
  caller text not null,
  -- The Idempotency-Key header as sent: 1 to 255 printable ASCII characters.
  key text not null,
  -- The operation and the SHA-256 (hex) of its canonical input: a retry must repeat both.
  operation text not null,
  request_hash text not null,
  -- Names the request that holds the key: only it writes the answer or gives the key back, so a
  -- request whose lease was taken over cannot overwrite its successor's row.
  lock_token text not null,
  locked_at timestamptz not null,
  -- The first answer: null while the request runs. response_body is the JSON text as kept
  -- (json, not jsonb, so the replay has the same key order as the first answer).
  response_status integer,
  response_body json,
  -- The 24-hour window runs from here; the hourly sweeper deletes older rows.
  created_at timestamptz not null,
  completed_at timestamptz,
  primary key (caller, key),
  check ((response_status is null) = (response_body is null))
);
-- The sweep of expired keys (src/auth/expired-sweeper.ts).
create index idempotency_keys_created_at on idempotency_keys (created_at);

/**
 * The client for work that needs a session of its own, by the pool it belongs to. Behind a
 * transaction-mode pooler (DATABASE_POOL_MODE=transaction) a server connection is the client's
 * for one transaction only, so what must outlive a transaction goes to DATABASE_DIRECT_URL, the
 * server itself: LISTEN (connection.ts routes `listen` there) and migrations (migrations.ts). Kept
 * by the pool rather than passed beside it so the callers that take a pool (`migrate(db.sql)` in
 * every command) reach the right address without knowing there are two.
 *
 * Migrations would also run through a transaction pooler (each file is one transaction under a
 * transaction-scoped advisory lock), but they go to the server because poolers bound how long a
 * transaction may hold a server connection (PgBouncer's query_timeout and server_lifetime, managed
 * poolers' own limits), an index build may take minutes, and a migration waiting for its lock would
 * hold one of the pool's few server connections that the running instances need.
 */
import type postgres from 'postgres';

type Sql = postgres.Sql;

const sessions = new WeakMap<Sql, Sql>();

/** Records that `session` (on the server itself) serves `pool`'s session work. */
export function registerSessionClient(pool: Sql, session: Sql): void {
  sessions.set(pool, session);
}

/** The client for `pool`'s session work: the one on DATABASE_DIRECT_URL when there is one, else the pool itself. */
export function sessionClientOf(pool: Sql): Sql {
  return sessions.get(pool) ?? pool;
}

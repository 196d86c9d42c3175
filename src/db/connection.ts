// One entry point for the database: a postgres.js client either on DATABASE_URL
// (production: any PostgreSQL 15+ with pgvector) or on the embedded PGlite server.
import postgres from 'postgres';
import type { DatabaseSettings } from '../config.ts';
import { watchConnections, type ConnectionWatch } from './connection-watch.ts';
import { withDeadline } from './deadline.ts';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './embedded.ts';
import { querySpanSettings } from './query-spans.ts';
import { registerSessionClient } from './session-client.ts';
import { wrapPool } from './transaction-guard.ts';

export type Sql = postgres.Sql;

export interface Database {
  sql: Sql;
  kind: 'embedded' | 'external';
  /** The external server's URL, for components that keep connections of their own (the job queue); undefined when embedded. */
  url: string | undefined;
  /** DATABASE_DIRECT_URL: the server itself when `url` is a pooler, for connections that need a session (pg-boss's LISTEN); undefined: `url`. */
  directUrl: string | undefined;
  /** `transaction` when `url` is a transaction-mode pooler: no prepared statements, no session state (openServer). */
  poolMode: DatabaseSettings['poolMode'];
  /** Ends the client (waiting briefly for running queries), then stops the embedded server. Safe to call more than once. */
  close(): Promise<void>;
  /** Resolves when the database answers a query, within PING_DEADLINE_MS. */
  ping(): Promise<void>;
  /**
   * LISTEN on `channel`: `onNotify` gets the payload of every notification whose transaction
   * committed (none of one that rolled back). On a server, from every process, through postgres.js's
   * own listening connection; `onListen` runs each time it listens, again after that connection came
   * back (notifications may have been missed meanwhile). Embedded, the one session listens: PGlite
   * delivers a session its own notifications once the transaction commits, so the process's own
   * writers reach its listeners the same way, per database and after commit. Answers the function
   * that stops `onNotify`.
   */
  listen(channel: string, onNotify: (payload: string) => void, onListen?: () => void): Promise<() => void>;
}

export interface DatabaseLogger {
  info(obj: object, msg?: string): void;
  warn?(obj: object, msg?: string): void;
}

export interface OpenDatabaseOptions {
  /** A PostgreSQL URL; without it the embedded database under dataDir is used. */
  databaseUrl?: string;
  dataDir: string;
  logger?: DatabaseLogger;
  /** Embedded only: start from this tarball (tests clone a migrated template). */
  loadDataDir?: Blob;
  /** Connection timeouts in milliseconds (0: off); config.database. Defaults: defaultDatabaseSettings. */
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  idleInTransactionTimeoutMs?: number;
  /** The client-side deadline of calls outside any `withDeadline` scope (deadline.ts), in milliseconds; 0: none. */
  deadlineMs?: number;
  /** Pool queries inside an open transaction reject (transaction-guard.ts). Default true; config.database turns it off in production. The protection of lost transactions is always on. */
  transactionGuard?: boolean;
  /** `transaction`: databaseUrl is a transaction-mode pooler (see openDatabase). Default `session`. */
  poolMode?: DatabaseSettings['poolMode'];
  /** The server itself, for what needs a session (LISTEN, migrations: session-client.ts); without it, databaseUrl. */
  directUrl?: string | undefined;
  /**
   * While tracing is on, each `db.query` span also carries its statement's text as the code wrote
   * it, without its parameters (query-spans.ts). Default false: no SQL text in spans.
   */
  traceQueryText?: boolean | undefined;
  /**
   * Called once the database is being started: for the embedded one, once its thread runs (PGlite
   * loads and opens there while the caller's thread does other work); for a server, at once.
   */
  onStarting?: () => void;
}

/** The same defaults as config.ts, for callers (tests, tools) that pass none. */
export const defaultDatabaseSettings: DatabaseSettings = {
  statementTimeoutMs: 8_000,
  lockTimeoutMs: 10_000,
  idleInTransactionTimeoutMs: 60_000,
  transactionGuard: true,
  deadlineMs: 10_000,
  jobDeadlineMs: 60_000,
  poolMode: 'session',
  directUrl: undefined,
};

/** The API's pool of connections on DATABASE_URL, per process (docs/deploying.md counts them all). */
export const POOL_MAX = 10;

/** ping()'s deadline: the readiness bound (specification, /readyz: the database answers within 2 s). */
export const PING_DEADLINE_MS = 2000;

/**
 * The server parameters every connection gets. A real server takes them from the startup message
 * (postgres.js `connection`), so each new pooled connection has them. PGlite ignores startup
 * parameters; openDatabase sets them on its one session instead, which keeps them across
 * reconnects. There only statement_timeout and lock_timeout are set, and neither really works:
 * PGlite runs a statement without yielding to the event loop, so a statement timeout can only fire
 * while a message is still arriving, and one backend never waits for a lock. An
 * idle_in_transaction_session_timeout that fires ends the session with FATAL, which froze the whole
 * process on PGlite 0.5.14 (measured), so embedded mode leaves it off.
 */
export function connectionParameters(settings: Pick<DatabaseSettings, 'statementTimeoutMs' | 'lockTimeoutMs' | 'idleInTransactionTimeoutMs'>, kind: Database['kind']): Record<string, string> {
  return {
    statement_timeout: String(settings.statementTimeoutMs),
    lock_timeout: String(settings.lockTimeoutMs),
    ...(kind === 'external' ? { idle_in_transaction_session_timeout: String(settings.idleInTransactionTimeoutMs) } : {}),
  };
}

// Column names stay as written (snake_case) and no type transforms: what the
// SQL says is what the code gets. Notices (e.g. "already exists, skipping")
// are not worth a log line each.
const commonOptions = {
  onnotice: () => {},
} satisfies postgres.Options<{}>;

/**
 * The embedded server takes one connection (see embedded.ts), so all queries go
 * through one: postgres.js queues them and keeps a transaction's queries on it.
 * The connection must also never be recycled, or the replacement could be
 * refused while the server still counts the old one.
 */
export const embeddedClientOptions = {
  ...commonOptions,
  max: 1,
  max_lifetime: null,
  idle_timeout: 0,
} satisfies postgres.Options<{}>;

/**
 * Seconds before a connection is tried again after failing, by the number of failures in a row
 * (postgres.js's `backoff`). Its default grows to 10-20 s after seven, and a query that arrives then
 * waits that long even when the server is back; capped at 1-2 s, a pool recovers within about two
 * seconds of the server, whatever the length of the outage. A connection is only tried again when a
 * query waits for it, so an outage costs at most one attempt per connection every second or two.
 */
function reconnectDelay(failures: number): number {
  return (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** failures, 2);
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const settings: DatabaseSettings = {
    statementTimeoutMs: options.statementTimeoutMs ?? defaultDatabaseSettings.statementTimeoutMs,
    lockTimeoutMs: options.lockTimeoutMs ?? defaultDatabaseSettings.lockTimeoutMs,
    idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs ?? defaultDatabaseSettings.idleInTransactionTimeoutMs,
    transactionGuard: options.transactionGuard ?? defaultDatabaseSettings.transactionGuard,
    deadlineMs: options.deadlineMs ?? defaultDatabaseSettings.deadlineMs,
    jobDeadlineMs: defaultDatabaseSettings.jobDeadlineMs, // a scope's business (withDeadline), not the pool's
    poolMode: options.poolMode ?? defaultDatabaseSettings.poolMode,
    directUrl: options.directUrl,
  };

  const queryText = options.traceQueryText === true;
  if (options.databaseUrl) {
    options.onStarting?.();
    return openServer(options.databaseUrl, settings, options.logger, queryText);
  }

  const started = performance.now();
  const embedded = await startEmbeddedDatabase({
    dataDir: options.dataDir,
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    ...(options.onStarting ? { onThreadStarted: options.onStarting } : {}),
  });
  // Listeners by channel. postgres.js hands `onnotify` to its connections (its own `listen` is
  // built on it, with a connection of its own, which the embedded server would refuse), but its
  // types omit it.
  const listeners = new Map<string, Set<(payload: string) => void>>();
  const onnotify = (channel: string, payload: string) => {
    for (const listener of listeners.get(channel) ?? []) listener(payload);
  };
  const sql = postgres(embedded.url, { ...embeddedClientOptions, onnotify } as postgres.Options<{}>);
  try {
    // For the session (is_local false): on PGlite it is the only one, and it outlives reconnects.
    for (const [name, value] of Object.entries(connectionParameters(settings, 'embedded'))) {
      await sql`select set_config(${name}, ${value}, false)`;
    }
  } catch (error) {
    await sql.end({ timeout: 0 }).catch(() => undefined);
    await embedded.close();
    throw error;
  }
  options.logger?.info({ kind: 'embedded', dataDir: options.dataDir, url: embedded.url, ms: Math.round(performance.now() - started) }, 'embedded database started');
  // The embedded server serves this one connection: no cancel request (it would be a second
  // connection) and nothing to drop. The deadline still answers the caller, and turns a query that
  // waited its whole deadline in the queue into a no-op; an expired transaction is rolled back.
  const guarded = wrapPool(sql, {
    guard: settings.transactionGuard,
    deadlineMs: settings.deadlineMs,
    deadlineActions: { cancel: false },
    spans: querySpanSettings({ embedded: true, queryText }),
  });
  // LISTEN is the session's, like its settings: issued once per channel, kept across reconnects.
  const listening = new Map<string, Promise<unknown>>();
  const listen: Database['listen'] = async (channel, onNotify, onListen) => {
    const issued = listening.get(channel) ?? guarded`listen ${guarded(channel)}`;
    listening.set(channel, issued);
    try {
      await issued;
    } catch (error) {
      listening.delete(channel);
      throw error;
    }
    // A function of its own per call, so the same one listening twice is removed once per stop.
    const listener = (payload: string) => onNotify(payload);
    const channelListeners = listeners.get(channel) ?? new Set();
    listeners.set(channel, channelListeners.add(listener));
    onListen?.();
    return () => void channelListeners.delete(listener);
  };
  return wrap(guarded, 'embedded', { url: undefined, directUrl: undefined, poolMode: 'session' }, listen, embedded);
}

/**
 * A server, directly or through a pooler. Deadlines in full: a statement that passes its deadline
 * is cancelled on the server (PgBouncer passes cancel requests on), and a server (or pooler) that
 * then answers neither it nor a fresh connection has its connections dropped.
 *
 * In transaction mode (DATABASE_POOL_MODE=transaction) a server connection is this client's for one
 * transaction only, so:
 * - no prepared statements (`prepare: false`): one prepared in a transaction is not on the server
 *   connection the next one gets (PgBouncer carries them only from 1.21; Debian ships 1.18);
 * - no pipelining (transaction-guard.ts, `serial`): without prepared statements postgres.js sends a
 *   query with parameters in two steps (Parse, Describe, Flush; then Bind, Execute, Sync), and when
 *   that follows another query on the same connection PgBouncer 1.18 hands the server connection
 *   back at the first query's end, with the second's first step already on it: its answer never
 *   comes, and the query waits for its deadline (measured: the soak through the pooler answered 503
 *   after 10 s within seconds of its start). One query at a time per connection, the pool's ten carry
 *   the rest (postgres.js's own `max_pipeline: 0` would also stop `begin` from reserving its
 *   connection);
 * - no startup parameters: PgBouncer refuses any it does not track (startup-refusal.ts), and a
 *   session setting would leak to whichever client gets that server connection next. The timeouts
 *   are set with set_config(..., is_local true) as the first statement of each transaction instead
 *   (transaction-guard.ts, `transactionSettings`), one more round trip per transaction;
 * - a statement outside any transaction gets no server timeout from us: wrapping each in a
 *   transaction would cost three round trips instead of one, and a SET before it would outlive it
 *   on the server connection. It keeps the client deadline (deadline.ts), which cancels it on the
 *   server when it passes, and the role's own statement_timeout (`ALTER ROLE ... SET
 *   statement_timeout`, which every server connection the pooler opens starts with) is the
 *   server-side floor docs/deploying.md asks for.
 * What needs a session goes to DATABASE_DIRECT_URL (session-client.ts): LISTEN here, migrations in
 * migrations.ts. Its client opens a connection only when used: one for LISTEN per process, and one
 * for migrations at start, closed again after IDLE_SESSION_S.
 */
function openServer(url: string, settings: DatabaseSettings, logger: DatabaseLogger | undefined, queryText: boolean): Database {
  const pooled = settings.poolMode === 'transaction';
  const parameters = connectionParameters(settings, 'external');
  const watch = watchConnections(url, logger);
  const sql = postgres(url, {
    ...commonOptions,
    max: POOL_MAX,
    backoff: reconnectDelay,
    prepare: !pooled,
    connection: pooled ? {} : parameters,
    socket: watch.socket,
  } as postgres.Options<{}>);
  const { hostname, port, pathname } = new URL(url);
  logger?.info({ kind: 'external', host: hostname, port, database: pathname.slice(1), poolMode: settings.poolMode, direct: settings.directUrl !== undefined }, 'database client created');
  const guarded = wrapPool(sql, {
    guard: settings.transactionGuard,
    deadlineMs: settings.deadlineMs,
    deadlineActions: { cancel: true, suspect: watch.suspect },
    ...(pooled ? { transactionSettings: parameters, serial: true } : {}),
    spans: querySpanSettings({ embedded: false, url, queryText }),
  });
  const addresses = { url, directUrl: settings.directUrl, poolMode: settings.poolMode };
  if (!settings.directUrl) return wrap(guarded, 'external', addresses, serverListen(guarded), undefined, [watch]);

  const directWatch = watchConnections(settings.directUrl, logger);
  const direct = postgres(settings.directUrl, {
    ...commonOptions,
    max: 1,
    idle_timeout: IDLE_SESSION_S,
    backoff: reconnectDelay,
    connection: parameters,
    socket: directWatch.socket,
  } as postgres.Options<{}>);
  const session = wrapPool(direct, {
    guard: settings.transactionGuard,
    deadlineMs: settings.deadlineMs,
    deadlineActions: { cancel: true, suspect: directWatch.suspect },
    spans: querySpanSettings({ embedded: false, url: settings.directUrl, queryText }),
  });
  // `sql.listen` too (the job event hub calls it on the pool): a LISTEN through a transaction
  // pooler would be heard by whichever client next got that server connection, or by nobody.
  const pool = new Proxy(guarded, {
    get(target, property, receiver): unknown {
      if (property === 'listen') return session.listen;
      return Reflect.get(target, property, receiver);
    },
  });
  registerSessionClient(pool, session);
  return wrap(pool, 'external', addresses, serverListen(session), undefined, [watch, directWatch], session);
}

/** Seconds an unused connection on DATABASE_DIRECT_URL stays open: the migrations' one closes soon after the start. */
const IDLE_SESSION_S = 10;

/** A server's LISTEN: postgres.js keeps one connection for it, and listens again when it comes back. */
function serverListen(sql: Sql): Database['listen'] {
  return async (channel, onNotify, onListen) => {
    const listener = await sql.listen(channel, onNotify, onListen);
    return () => void listener.unlisten().catch(() => undefined);
  };
}

function wrap(
  sql: Sql,
  kind: Database['kind'],
  addresses: Pick<Database, 'url' | 'directUrl' | 'poolMode'>,
  listen: Database['listen'],
  embedded?: EmbeddedDatabase,
  watches: ConnectionWatch[] = [],
  session?: Sql,
): Database {
  let closing: Promise<void> | undefined;
  return {
    sql,
    kind,
    ...addresses,
    listen,
    close() {
      closing ??= (async () => {
        try {
          await Promise.all([sql.end({ timeout: 5 }), session?.end({ timeout: 5 })]);
        } finally {
          // Connections to a server that does not answer are only half-closed by `end`.
          for (const watch of watches) watch.dropAll();
          await embedded?.close();
        }
      })();
      return closing;
    },
    async ping() {
      await withDeadline(PING_DEADLINE_MS, async () => {
        await sql`select 1`;
      });
    },
  };
}

// One entry point for the database: a postgres.js client either on DATABASE_URL
// (production: any PostgreSQL 15+ with pgvector) or on the embedded PGlite server.
import postgres from 'postgres';
import type { DatabaseSettings } from '../config.ts';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './embedded.ts';
import { wrapPool } from './transaction-guard.ts';

export type Sql = postgres.Sql;

export interface Database {
  sql: Sql;
  kind: 'embedded' | 'external';
  /** The external server's URL, for components that keep connections of their own (the job queue); undefined when embedded. */
  url: string | undefined;
  /** Ends the client (waiting briefly for running queries), then stops the embedded server. Safe to call more than once. */
  close(): Promise<void>;
  /** Resolves when the database answers a query. */
  ping(): Promise<void>;
}

export interface DatabaseLogger {
  info(obj: object, msg?: string): void;
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
  /** Pool queries inside an open transaction reject (transaction-guard.ts). Default true; config.database turns it off in production. The protection of lost transactions is always on. */
  transactionGuard?: boolean;
}

/** The same defaults as config.ts, for callers (tests, tools) that pass none. */
export const defaultDatabaseSettings: DatabaseSettings = {
  statementTimeoutMs: 30_000,
  lockTimeoutMs: 10_000,
  idleInTransactionTimeoutMs: 60_000,
  transactionGuard: true,
};

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

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const settings: DatabaseSettings = {
    statementTimeoutMs: options.statementTimeoutMs ?? defaultDatabaseSettings.statementTimeoutMs,
    lockTimeoutMs: options.lockTimeoutMs ?? defaultDatabaseSettings.lockTimeoutMs,
    idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs ?? defaultDatabaseSettings.idleInTransactionTimeoutMs,
    transactionGuard: options.transactionGuard ?? defaultDatabaseSettings.transactionGuard,
  };
  const guard = (sql: Sql) => wrapPool(sql, { guard: settings.transactionGuard });

  if (options.databaseUrl) {
    const sql = postgres(options.databaseUrl, { ...commonOptions, max: 10, connection: connectionParameters(settings, 'external') });
    const { hostname, port, pathname } = new URL(options.databaseUrl);
    options.logger?.info({ kind: 'external', host: hostname, port, database: pathname.slice(1) }, 'database client created');
    return wrap(guard(sql), 'external', options.databaseUrl);
  }

  const started = performance.now();
  const embedded = await startEmbeddedDatabase({
    dataDir: options.dataDir,
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
  });
  const sql = postgres(embedded.url, embeddedClientOptions);
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
  options.logger?.info(
    { kind: 'embedded', dataDir: options.dataDir, url: embedded.url, ms: Math.round(performance.now() - started) },
    'embedded database started',
  );
  return wrap(guard(sql), 'embedded', undefined, embedded);
}

function wrap(sql: Sql, kind: Database['kind'], url: string | undefined, embedded?: EmbeddedDatabase): Database {
  let closing: Promise<void> | undefined;
  return {
    sql,
    kind,
    url,
    close() {
      closing ??= (async () => {
        try {
          await sql.end({ timeout: 5 });
        } finally {
          await embedded?.close();
        }
      })();
      return closing;
    },
    async ping() {
      await sql`select 1`;
    },
  };
}

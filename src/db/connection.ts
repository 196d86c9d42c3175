// One entry point for the database: a postgres.js client either on DATABASE_URL
// (production: any PostgreSQL 15+ with pgvector) or on the embedded PGlite server.
import postgres from 'postgres';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './embedded.ts';

export type Sql = postgres.Sql;

export interface Database {
  sql: Sql;
  kind: 'embedded' | 'external';
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
  if (options.databaseUrl) {
    const sql = postgres(options.databaseUrl, { ...commonOptions, max: 10 });
    const { hostname, port, pathname } = new URL(options.databaseUrl);
    options.logger?.info({ kind: 'external', host: hostname, port, database: pathname.slice(1) }, 'database client created');
    return wrap(sql, 'external');
  }

  const started = performance.now();
  const embedded = await startEmbeddedDatabase({
    dataDir: options.dataDir,
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
  });
  const sql = postgres(embedded.url, embeddedClientOptions);
  options.logger?.info(
    { kind: 'embedded', dataDir: options.dataDir, url: embedded.url, ms: Math.round(performance.now() - started) },
    'embedded database started',
  );
  return wrap(sql, 'embedded', embedded);
}

function wrap(sql: Sql, kind: Database['kind'], embedded?: EmbeddedDatabase): Database {
  let closing: Promise<void> | undefined;
  return {
    sql,
    kind,
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

// A fresh, already-migrated database for one test file, copied from the template
// that test/global-setup.ts builds once per run: an embedded PGlite clone, or,
// with TEST_DATABASE_URL, a database of its own on that server. With TEST_POOLER_URL too
// (`make test-pooler`: PgBouncer in transaction mode in front of that server), the service's
// clients reach it through the pooler, as DATABASE_URL with DATABASE_POOL_MODE=transaction,
// and the server itself is their DATABASE_DIRECT_URL; creating and dropping stay on the server.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { inject } from 'vitest';
import { openDatabase, type Database } from '../../src/db/connection.ts';
import { copyDataDir, deletingDataDirOnClose } from './data-dir.ts';
import { takePooledDatabase, type PoolableDatabase } from './database-pool.ts';

export interface TestDatabaseOptions {
  /**
   * The embedded PGlite clone even when TEST_DATABASE_URL is set: for tests about the embedded
   * database itself, or that rely on its single connection (session state such as search_path).
   */
  embedded?: boolean;
  /** With TEST_DATABASE_URL: through this transaction-mode pooler instead of TEST_POOLER_URL (test/pooler starts its own). */
  poolerUrl?: string;
  /**
   * A newly opened embedded database of its own instead of one reused from earlier files
   * (database-pool.ts): for a file that crashes its thread, dumps or reads its data directory,
   * expects close() to close it, or changes its schema or server settings.
   */
  fresh?: boolean;
}

/** Set when test databases live on a real server (TEST_DATABASE_URL): several connections, real concurrency. */
export const externalDatabaseUrl: string | undefined = process.env.TEST_DATABASE_URL || undefined;

/** Set by `make test-pooler` (scripts/test-pooler.sh): a transaction-mode PgBouncer in front of TEST_DATABASE_URL's server. */
export const poolerUrl: string | undefined = (externalDatabaseUrl && process.env.TEST_POOLER_URL) || undefined;

/**
 * The settings a service needs for the test database at `url` (DATABASE_URL as databaseUrlOf
 * answers it): through the pooler, its mode and the server's own address (the same database name
 * at TEST_DATABASE_URL's host and port) as well.
 */
export function databaseEnvFor(url: string): Record<string, string> {
  if (!externalDatabaseUrl || !poolerHosts.has(new URL(url).host)) return { DATABASE_URL: url };
  const direct = new URL(url);
  direct.host = new URL(externalDatabaseUrl).host;
  return { DATABASE_URL: url, DATABASE_POOL_MODE: 'transaction', DATABASE_DIRECT_URL: direct.toString() };
}

/** The host:port of every pooler test databases are reached through: TEST_POOLER_URL's, and those passed to createTestDatabase. */
const poolerHosts = new Set(poolerUrl ? [new URL(poolerUrl).host] : []);

/** openDatabase's options for the test database at `url` (a URL databaseUrlOf answered). */
function clientOptions(url: string) {
  const env = databaseEnvFor(url);
  return { databaseUrl: url, dataDir: inject('testScratchRoot'), ...(env.DATABASE_DIRECT_URL ? { poolMode: 'transaction' as const, directUrl: env.DATABASE_DIRECT_URL } : {}) };
}

/** The URL of each external test database, for second clients on it (through the pooler under `make test-pooler`). */
const databaseUrls = new WeakMap<Database, string>();

/**
 * A new embedded data directory holding a copy of the migrated template (closed: open it, or hand
 * it to a process as DATA_DIR); the caller deletes it.
 */
export async function migratedDataDir(): Promise<string> {
  const dataDir = await mkdtemp(join(inject('testScratchRoot'), 'workspace-api-test-'));
  try {
    await copyDataDir(inject('templateDir'), dataDir);
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  return dataDir;
}

/**
 * An isolated database holding exactly the migrated template. Embedded, one reset and reused
 * from an earlier file of this worker process (database-pool.ts), whose close() hands it back;
 * with `fresh`, a copy of its own, which close() closes and deletes.
 */
export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<Database> {
  if (externalDatabaseUrl && !options.embedded) return createExternalTestDatabase(externalDatabaseUrl, options.poolerUrl ?? poolerUrl);
  // TEST_DATABASE_POOL=off: every file opens its own, as before the pool (to measure it, or to rule it out).
  if (options.fresh || process.env.TEST_DATABASE_POOL === 'off') {
    const { db, dataDir } = await openTemplateCopy();
    return deletingDataDirOnClose(db, dataDir);
  }
  return takePooledDatabase(openTemplateCopy);
}

async function openTemplateCopy(): Promise<PoolableDatabase> {
  const dataDir = await migratedDataDir();
  try {
    return { db: await openDatabase({ dataDir }), dataDir };
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** One statement on the server's own database (CREATE/DROP DATABASE cannot run in the target). */
async function onServer(url: string, statement: string): Promise<void> {
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(statement);
  } finally {
    await admin.end();
  }
}

// `CREATE DATABASE ... TEMPLATE` copies the migrated template in a few tens of milliseconds.
// The name starts with the template's, so the run's teardown finds databases a killed worker left.
async function createExternalTestDatabase(url: string, pooler: string | undefined): Promise<Database> {
  const template = inject('templateDatabase');
  if (!template) throw new Error('TEST_DATABASE_URL is set, but test/global-setup.ts made no template database (was it set when vitest started?)');
  const name = `${template}_${randomBytes(6).toString('hex')}`;
  await onServer(url, `create database ${quoteIdentifier(name)} template ${quoteIdentifier(template)}`);
  if (pooler) poolerHosts.add(new URL(pooler).host);
  const target = new URL(pooler ?? url);
  target.pathname = `/${name}`;
  let db: Database;
  try {
    // The external kind: a pool of several connections, as in production.
    db = await openDatabase(clientOptions(target.toString()));
  } catch (error) {
    await onServer(url, `drop database if exists ${quoteIdentifier(name)} with (force)`);
    throw error;
  }
  let closing: Promise<void> | undefined;
  const testDb: Database = {
    ...db,
    close() {
      closing ??= (async () => {
        try {
          await db.close();
        } finally {
          await onServer(url, `drop database if exists ${quoteIdentifier(name)} with (force)`);
        }
      })();
      return closing;
    },
  };
  databaseUrls.set(testDb, target.toString());
  return testDb;
}

/** The URL of an external test database (for processes the test spawns); undefined on the embedded one. */
export function databaseUrlOf(db: Database): string | undefined {
  return databaseUrls.get(db);
}

/**
 * Another client on the same test database, as a second API instance has: on a real server its
 * own pool of connections (close it before the database). The embedded server takes a single
 * client, so there it is the same one, and its close() does nothing.
 */
export async function openSecondClient(db: Database): Promise<Database> {
  const url = databaseUrls.get(db);
  if (!url) return { ...db, close: async () => {} };
  return openDatabase(clientOptions(url));
}

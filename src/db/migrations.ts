// Forward-only migrations: each sql/NNNN_name.sql file runs once, in number
// order, in its own transaction, and is recorded with its checksum in
// schema_migrations. Editing an applied file is an error: fix things with a
// new migration. Files that cannot run in a transaction (CREATE INDEX
// CONCURRENTLY, ALTER TYPE ... ADD VALUE before PG 12) are not supported.
import type postgres from 'postgres';
import { NO_DEADLINE, withDeadline } from './deadline.ts';
import { readMigrationFiles, type MigrationFile } from './migration-files.ts';
import { sessionClientOf } from './session-client.ts';
import { explainStartupRefusal } from './startup-refusal.ts';

export { readMigrationFiles, type MigrationFile } from './migration-files.ts';

type Sql = postgres.Sql;
type Tx = postgres.TransactionSql;

export const defaultMigrationsDir: URL = new URL('../../sql/', import.meta.url);

export interface MigrationLogger {
  info(obj: object, msg?: string): void;
}

export interface MigrateOptions {
  dir?: string | URL;
  logger?: MigrationLogger;
}

export interface MigrationStatus {
  /** Migration files in the directory. */
  shipped: number;
  /** Rows in schema_migrations. */
  applied: number;
  /** Files not applied yet, as "NNNN_name". */
  pending: string[];
  /** Applied versions with no file here (a newer release ran against this database). */
  unknown: number;
  /** The highest applied version as "NNNN_name", or null. */
  latestApplied: string | null;
}

interface AppliedRow {
  version: string;
  name: string;
  checksum: string;
}

// Every runner takes this transaction-scoped advisory lock before reading or
// writing schema_migrations, so runners in several processes take turns and
// each re-checks what the others did. A transaction lock (not a session one)
// needs no dedicated connection and is released by commit, rollback or a
// dropped connection.
const lockKey = 7_215_903_418; // arbitrary, but fixed forever: it is the lock's identity

/**
 * Applies the pending migrations in order; returns the ones this call applied, as "NNNN_name".
 * Without a client deadline (deadline.ts), like their server timeouts (takeLock): building an
 * index or waiting for another runner can take minutes. On the server itself when the pool is
 * behind a pooler with DATABASE_DIRECT_URL (session-client.ts says why). Every command migrates
 * first, so a pooler that refuses the connection's startup parameters is explained here.
 */
export function migrate(sql: Sql, options: MigrateOptions = {}): Promise<string[]> {
  return withDeadline(NO_DEADLINE, () => applyPending(sessionClientOf(sql), options)).catch((error: unknown) => {
    throw explainStartupRefusal(error) ?? error;
  });
}

async function applyPending(sql: Sql, options: MigrateOptions): Promise<string[]> {
  const files = await readMigrationFiles(options.dir ?? defaultMigrationsDir);
  const applied = await sql.begin(async (tx) => {
    await takeLock(tx);
    await tx`
      create table if not exists schema_migrations (
        version text primary key,
        name text not null,
        checksum text not null,
        applied_at timestamptz not null default now()
      )`;
    return readApplied(tx);
  });
  const pending = checkHistory(files, applied);

  const done: string[] = [];
  for (const file of pending) {
    const started = performance.now();
    const ran = await sql
      .begin(async (tx) => {
        await takeLock(tx);
        const [row] = await tx<AppliedRow[]>`select version, name, checksum from schema_migrations where version = ${file.version}`;
        if (row) {
          // Another runner applied it while this one waited for the lock.
          if (row.checksum !== file.checksum) throw checksumError(file, row);
          return false;
        }
        await tx.unsafe(file.contents); // simple protocol: one file may hold many statements
        await tx`insert into schema_migrations (version, name, checksum) values (${file.version}, ${file.name}, ${file.checksum})`;
        return true;
      })
      .catch((error: unknown) => {
        if (error instanceof ChecksumError) throw error;
        const message = error instanceof Error ? error.message : String(error);
        throw new Error(`Migration ${file.fileName} failed and was rolled back; later migrations were not run: ${message}`, { cause: error });
      });
    if (!ran) continue;
    done.push(label(file));
    options.logger?.info({ migration: label(file), ms: Math.round(performance.now() - started) }, 'migration applied');
  }
  return done;
}

export async function migrationStatus(sql: Sql, dir: string | URL = defaultMigrationsDir): Promise<MigrationStatus> {
  const files = await readMigrationFiles(dir);
  const [exists] = await sql<{ exists: boolean }[]>`select to_regclass('schema_migrations') is not null as exists`;
  const applied = exists?.exists ? await readApplied(sql) : [];
  const appliedVersions = new Set(applied.map((row) => row.version));
  const shippedVersions = new Set(files.map((file) => file.version));
  const latest = applied.at(-1);
  return {
    shipped: files.length,
    applied: applied.length,
    pending: files.filter((file) => !appliedVersions.has(file.version)).map(label),
    unknown: applied.filter((row) => !shippedVersions.has(row.version)).length,
    latestApplied: latest ? `${latest.version}_${latest.name}` : null,
  };
}

/** Refuses edited history before anything runs; returns the files still to apply. */
function checkHistory(files: MigrationFile[], applied: AppliedRow[]): MigrationFile[] {
  const byVersion = new Map(applied.map((row) => [row.version, row]));
  for (const file of files) {
    const row = byVersion.get(file.version);
    if (row && row.checksum !== file.checksum) throw checksumError(file, row);
  }
  const pending = files.filter((file) => !byVersion.has(file.version));
  const latest = applied.at(-1);
  const early = latest && pending.find((file) => file.version < latest.version);
  if (latest && early) {
    // Applying it now would run it after newer migrations here but before them
    // on a fresh database: the two would end up with different schemas.
    throw new Error(
      `Migration ${early.fileName} is not applied, but the later ${latest.version}_${latest.name} already is. ` + 'Migrations are forward-only: give it a number after the latest applied one.',
    );
  }
  return pending;
}

class ChecksumError extends Error {}

function checksumError(file: MigrationFile, row: AppliedRow): Error {
  return new ChecksumError(
    `Migration ${file.fileName} was changed after it was applied: the applied checksum (${row.checksum}) ` +
      `differs from the file's (${file.checksum}). Migrations are forward-only: restore the file ` +
      'and add a new migration instead.',
  );
}

async function takeLock(tx: Tx): Promise<void> {
  // A migration may run long and a runner may queue behind another: the connection's statement
  // and lock timeouts (DB_STATEMENT_TIMEOUT_MS, DB_LOCK_TIMEOUT_MS) are for requests, not for this
  // transaction.
  await tx`select set_config('statement_timeout', '0', true), set_config('lock_timeout', '0', true)`;
  await tx`select pg_advisory_xact_lock(${lockKey}::bigint)`;
}

async function readApplied(sql: Sql | Tx): Promise<AppliedRow[]> {
  return sql<AppliedRow[]>`select version, name, checksum from schema_migrations order by version`;
}

function label(file: MigrationFile): string {
  return `${file.version}_${file.name}`;
}

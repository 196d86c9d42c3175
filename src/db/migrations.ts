// Forward-only migrations: each sql/NNNN_name.sql file runs once, in number order, and is
// recorded with its checksum in schema_migrations. Editing an applied file is an error: fix things
// with a new migration. They are written to run while the previous release serves
// (docs/migrations.md, checked by `make lint-migrations`), and the runner keeps its side of that:
// - a file runs in one transaction, or, when it builds or drops an index CONCURRENTLY, statement
//   by statement outside one, each safe to run again (migration-steps.ts);
// - every statement waits for its locks under a short lock_timeout, retried with backoff
//   (lock-retry.ts), so a migration never queues the table's traffic behind a long transaction;
// - one runner at a time, under a session advisory lock taken by polling (see takeRunnerLock).
import type postgres from 'postgres';
import { NO_DEADLINE, withDeadline } from './deadline.ts';
import { DEFAULT_LOCK_RETRY, withLockRetry, type LockRetry } from './lock-retry.ts';
import { readMigrationFiles, type MigrationFile } from './migration-files.ts';
import { migrationSteps, type ConcurrentStatement } from './migration-steps.ts';
import { sessionClientOf } from './session-client.ts';
import { explainStartupRefusal } from './startup-refusal.ts';

export { readMigrationFiles, type MigrationFile } from './migration-files.ts';

type Sql = postgres.Sql;
type Reserved = postgres.ReservedSql;

export const defaultMigrationsDir: URL = new URL('../../sql/', import.meta.url);

export interface MigrationLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export interface MigrateOptions {
  dir?: string | URL;
  logger?: MigrationLogger;
  /** How long each try waits for its locks, and how often it tries (lock-retry.ts); tests shorten it. */
  lockRetry?: Partial<LockRetry>;
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

// The runners' advisory lock: runners in several processes take turns, and each reads what the
// others applied once it holds it. Releases up to 2026-11-28 took it per file, transaction-scoped;
// a session lock here conflicts with theirs all the same.
const lockKey = 7_215_903_418; // arbitrary, but fixed forever: it is the lock's identity

/** How often a runner that waits for another one asks for the lock again. */
const RUNNER_LOCK_POLL_MS = 250;

/**
 * Applies the pending migrations in order; returns the ones this call applied, as "NNNN_name".
 * Without a client deadline (deadline.ts) and without statement_timeout: building an index or
 * waiting for another runner can take minutes. On the server itself when the pool is behind a
 * pooler with DATABASE_DIRECT_URL (session-client.ts says why). Every command migrates first, so a
 * pooler that refuses the connection's startup parameters is explained here.
 */
export function migrate(sql: Sql, options: MigrateOptions = {}): Promise<string[]> {
  return withDeadline(NO_DEADLINE, () => applyPending(sessionClientOf(sql), options)).catch((error: unknown) => {
    throw explainStartupRefusal(error) ?? error;
  });
}

async function applyPending(sql: Sql, options: MigrateOptions): Promise<string[]> {
  const files = await readMigrationFiles(options.dir ?? defaultMigrationsDir);
  const retry = { ...DEFAULT_LOCK_RETRY, ...options.lockRetry };
  // One session for the whole run: the advisory lock and the statements that run outside a
  // transaction need the same connection from start to end.
  const session = await sql.reserve();
  const done: string[] = [];
  try {
    await session`select set_config('statement_timeout', '0', false)`;
    await takeRunnerLock(session);
    try {
      await session`
        create table if not exists schema_migrations (
          version text primary key,
          name text not null,
          checksum text not null,
          applied_at timestamptz not null default now()
        )`;
      for (const file of checkHistory(files, await readApplied(session))) {
        const started = performance.now();
        await applyFile(session, file, retry, options.logger).catch((error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          throw new Error(`Migration ${file.fileName} failed and was rolled back; later migrations were not run: ${message}`, { cause: error });
        });
        done.push(label(file));
        options.logger?.info({ migration: label(file), ms: Math.round(performance.now() - started) }, 'migration applied');
      }
    } finally {
      await session`select pg_advisory_unlock(${lockKey}::bigint)`.catch(() => undefined);
    }
  } finally {
    // The connection goes back to the pool with the settings it came with (its startup parameters).
    await session.unsafe('reset statement_timeout; reset lock_timeout').catch(() => undefined);
    session.release();
  }
  return done;
}

/**
 * Takes the runners' lock, asking again every RUNNER_LOCK_POLL_MS while another runner holds it.
 * Not pg_advisory_lock, which would wait inside a statement: a session waiting in a statement
 * holds a snapshot, and the other runner's CREATE INDEX CONCURRENTLY waits for every older snapshot
 * to go away, so each would wait for the other until the deadlock detector cancelled one.
 */
async function takeRunnerLock(session: Reserved): Promise<void> {
  for (;;) {
    const [row] = await session<{ locked: boolean }[]>`select pg_try_advisory_lock(${lockKey}::bigint) as locked`;
    if (row!.locked) return;
    await new Promise((resolve) => setTimeout(resolve, RUNNER_LOCK_POLL_MS));
  }
}

async function applyFile(session: Reserved, file: MigrationFile, retry: LockRetry, logger: MigrationLogger | undefined): Promise<void> {
  const steps = await migrationSteps(file);
  const onWait = (what: string) => (wait: object) => logger?.warn({ migration: label(file), ...wait }, `${what} waited too long for a lock; trying again`);
  if (steps.kind === 'transaction') {
    await withLockRetry(
      session,
      retry,
      async (lockTimeoutMs) => {
        await session.unsafe('begin');
        try {
          await session`select set_config('lock_timeout', ${String(lockTimeoutMs)}, true)`;
          await session.unsafe(file.contents); // simple protocol: one file may hold many statements
          await session`insert into schema_migrations (version, name, checksum) values (${file.version}, ${file.name}, ${file.checksum})`;
          await session.unsafe('commit');
        } catch (error) {
          await session.unsafe('rollback').catch(() => undefined);
          throw error;
        }
      },
      onWait('the migration'),
    );
    return;
  }
  for (const statement of steps.statements) {
    await withLockRetry(session, retry, (lockTimeoutMs) => runConcurrently(session, statement, lockTimeoutMs), onWait(`line ${statement.line}`));
  }
  await session`insert into schema_migrations (version, name, checksum) values (${file.version}, ${file.name}, ${file.checksum})`;
}

/**
 * One CREATE or DROP INDEX CONCURRENTLY. A build that failed before (here, or in a runner that
 * died) left its index behind, marked invalid: IF NOT EXISTS would keep it, so it is dropped first.
 * The lock_timeout covers taking the table's lock (SHARE UPDATE EXCLUSIVE, which reads and
 * writes do not wait for); the build's waits for older transactions to end hold back no one,
 * and are not limited.
 */
async function runConcurrently(session: Reserved, statement: ConcurrentStatement, lockTimeoutMs: number): Promise<void> {
  await session`select set_config('lock_timeout', ${String(lockTimeoutMs)}, false)`;
  if (statement.builds) {
    const [invalid] = await session<{ name: string }[]>`
      select format('%I.%I', n.nspname, c.relname) as name
      from pg_index i join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace
      where c.relname = ${statement.builds.name} and i.indrelid = to_regclass(${statement.builds.table}) and not i.indisvalid`;
    if (invalid) await session.unsafe(`drop index concurrently if exists ${invalid.name}`);
  }
  await session.unsafe(statement.text);
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

async function readApplied(sql: Sql): Promise<AppliedRow[]> {
  return sql<AppliedRow[]>`select version, name, checksum from schema_migrations order by version`;
}

function label(file: MigrationFile): string {
  return `${file.version}_${file.name}`;
}

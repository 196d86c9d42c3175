/**
 * SQL of background_migrations (sql/0016): where each background migration is. The only module
 * that writes the table; the batches themselves write through the stores of the tables they change.
 */
import type { Db } from '../db/db.ts';

export interface BackgroundMigrationRow {
  name: string;
  state: 'running' | 'succeeded';
  cursor: string | null;
  rowsDone: number;
  rowsTotal: number;
  batches: number;
  lastError: string | null;
  startedAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

const columns = (sql: Db) => sql`
  name, state, cursor, rows_done::float8 as "rowsDone", rows_total::float8 as "rowsTotal", batches, last_error as "lastError",
  started_at as "startedAt", updated_at as "updatedAt", finished_at as "finishedAt"`;

/** Records the migration as started, unless it already is (or is done); answers its row. */
export async function startBackgroundMigration(sql: Db, name: string, rowsTotal: number, now: Date): Promise<BackgroundMigrationRow> {
  await sql`
    insert into background_migrations (name, rows_total, started_at, updated_at) values (${name}, ${rowsTotal}, ${now}, ${now})
    on conflict (name) do nothing`;
  const [row] = await sql<BackgroundMigrationRow[]>`select ${columns(sql)} from background_migrations where name = ${name}`;
  return row!;
}

/**
 * The migration's row, locked for the caller's transaction (one batch at a time, across every
 * worker); null when another worker's batch holds it now.
 */
export async function claimBackgroundMigration(tx: Db, name: string): Promise<BackgroundMigrationRow | null> {
  const [row] = await tx<BackgroundMigrationRow[]>`select ${columns(tx)} from background_migrations where name = ${name} for update skip locked`;
  return row ?? null;
}

/** After a batch, in its transaction: the new cursor, or the end when `cursor` is null. */
export async function recordBatch(tx: Db, name: string, cursor: string | null, rows: number, now: Date): Promise<void> {
  await tx`
    update background_migrations
    set cursor = coalesce(${cursor}, cursor), rows_done = rows_done + ${rows}, batches = batches + 1, last_error = null, updated_at = ${now},
        state = ${cursor === null ? 'succeeded' : 'running'}, finished_at = ${cursor === null ? now : null},
        rows_total = greatest(rows_total, rows_done + ${rows})
    where name = ${name}`;
}

export async function recordBatchError(sql: Db, name: string, message: string, now: Date): Promise<void> {
  await sql`update background_migrations set last_error = ${message}, updated_at = ${now} where name = ${name}`;
}

export async function listBackgroundMigrations(sql: Db): Promise<BackgroundMigrationRow[]> {
  return sql<BackgroundMigrationRow[]>`select ${columns(sql)} from background_migrations order by started_at, name`;
}

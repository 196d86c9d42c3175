/**
 * Background migrations (docs/migrations.md, "Backfills"): data changes over whole tables, made by
 * the workers in small batches instead of by a migration under its locks.
 *
 * - Resumable: each batch is one short transaction that changes its rows and moves the cursor in
 *   background_migrations together, so a crash or a restart goes on from the last batch.
 * - One batch at a time across every worker: the batch's transaction holds the migration's row
 *   (FOR UPDATE SKIP LOCKED); a second worker that finds it held leaves.
 * - Throttled: after each batch the worker pauses at least as long as the batch took, so a
 *   backfill takes at most half of one connection; batches grow or shrink to take about
 *   TARGET_BATCH_MS, and each waits for its locks under a short lock_timeout. On the embedded
 *   database the batches share the one connection with the API: each also waits for the API's
 *   requests in flight, as a job's statements do.
 * - Run in slices: a job (queue.ts, the background-migrations queue) runs batches for SLICE_MS,
 *   then queues the next slice and ends, so a worker that stops waits for one batch at most.
 *   Housekeeping queues a slice again for any migration not finished, should a slice's job fail
 *   for good.
 */
import type { Sql } from '../db/connection.ts';
import type { Db } from '../db/db.ts';
import { isLockTimeout } from '../db/lock-retry.ts';
import { OPEN_GATE, type RequestGate } from '../db/request-gate.ts';
import { countChunks, fillChunkTextHashes } from '../documents/text-store.ts';
import type { Logger } from '../logger.ts';
import { claimBackgroundMigration, listBackgroundMigrations, recordBatch, recordBatchError, startBackgroundMigration } from './background-migrations-store.ts';

export interface BackgroundMigration {
  /** Fixed forever: its row in background_migrations is found by it. */
  name: string;
  /** The rows it will visit, for its progress. */
  count(sql: Db): Promise<number>;
  /** One batch of at most `limit` rows after `cursor` (null: from the start); `last` null when none was left. */
  batch(tx: Db, cursor: string | null, limit: number): Promise<{ last: string | null; visited: number }>;
}

/** Every background migration the workers run, oldest first. */
export const backgroundMigrations: readonly BackgroundMigration[] = [
  // Chunks stored before sql/0013 have no text hash, so a re-index embedded them again (credits and
  // AI time) instead of reusing their embeddings (documents/text-store.ts, storedEmbeddings).
  { name: 'chunk-text-hashes', count: countChunks, batch: fillChunkTextHashes },
];

export interface SliceOptions {
  sql: Sql;
  logger: Logger;
  now(): Date;
  /** The API's requests in flight: on the embedded database each batch waits for them (db/request-gate.ts). */
  requests?: RequestGate;
  /** How long a slice runs batches; tests shorten it. */
  sliceMs?: number;
}

const SLICE_MS = 10_000;
const TARGET_BATCH_MS = 100;
const FIRST_BATCH = 100;
const MIN_BATCH = 10;
const MAX_BATCH = 5_000;
/** The wait for a batch's locks; a batch that cannot get them is tried again after its pause. */
const BATCH_LOCK_TIMEOUT_MS = 200;
const BATCH_STATEMENT_TIMEOUT_MS = 10_000;

/**
 * Records each known migration as started (once: its rows are counted then, not at every start)
 * and answers those still to finish.
 */
export async function pendingBackgroundMigrations(sql: Sql, now: Date, known: readonly BackgroundMigration[] = backgroundMigrations): Promise<string[]> {
  const states = new Map((await listBackgroundMigrations(sql)).map((row) => [row.name, row.state]));
  const pending: string[] = [];
  for (const migration of known) {
    const state = states.get(migration.name) ?? (await startBackgroundMigration(sql, migration.name, await migration.count(sql), now)).state;
    if (state !== 'succeeded') pending.push(migration.name);
  }
  return pending;
}

/**
 * Runs batches of the named migration for about a slice: 'done' once it has finished (or is
 * unknown to this release), 'busy' when another worker runs it now, 'more' when it goes on.
 */
export async function runSlice(name: string, options: SliceOptions, known: readonly BackgroundMigration[] = backgroundMigrations): Promise<'done' | 'busy' | 'more'> {
  const migration = known.find((each) => each.name === name);
  if (!migration) return 'done'; // a newer release's: its own workers run it
  const { sql, logger } = options;
  const endsAt = performance.now() + (options.sliceMs ?? SLICE_MS);
  let limit = FIRST_BATCH;
  while (performance.now() < endsAt) {
    await (options.requests ?? OPEN_GATE).waitForIdle();
    const started = performance.now();
    let outcome: 'done' | 'busy' | 'more';
    try {
      outcome = await sql.begin(async (tx) => {
        await tx`select set_config('lock_timeout', ${String(BATCH_LOCK_TIMEOUT_MS)}, true), set_config('statement_timeout', ${String(BATCH_STATEMENT_TIMEOUT_MS)}, true)`;
        const row = await claimBackgroundMigration(tx, name);
        if (!row) return 'busy';
        if (row.state === 'succeeded') return 'done';
        const { last, visited } = await migration.batch(tx, row.cursor, limit);
        await recordBatch(tx, name, last, visited, options.now());
        return last === null ? 'done' : 'more';
      });
    } catch (error) {
      if (!isLockTimeout(error)) logger.warn({ err: error, migration: name }, 'a background migration batch failed; it is tried again');
      await recordBatchError(sql, name, error instanceof Error ? error.message : String(error), options.now()).catch(() => undefined);
      if (!isLockTimeout(error)) throw error; // the job's retries, then housekeeping, try again
      outcome = 'more';
      limit = Math.max(MIN_BATCH, Math.floor(limit / 2));
    }
    if (outcome !== 'more') {
      if (outcome === 'done') logger.info({ migration: name }, 'background migration finished');
      return outcome;
    }
    const took = performance.now() - started;
    if (took < TARGET_BATCH_MS / 2) limit = Math.min(MAX_BATCH, limit * 2);
    else if (took > TARGET_BATCH_MS * 2) limit = Math.max(MIN_BATCH, Math.floor(limit / 2));
    await new Promise((resolve) => setTimeout(resolve, Math.max(took, 10)));
  }
  return 'more';
}

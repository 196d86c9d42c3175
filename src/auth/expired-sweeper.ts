/**
 * Deletes sessions and email tokens that can no longer be used. Nothing depends on it for
 * correctness (an expired session or token is refused when presented, sessions.ts and
 * verification-tokens.ts), but without it both tables only grow.
 *
 * A session has ended once its absolute expiry (`expires_at`) or 7 days without use
 * (`last_verified_at` + sessionPolicy.inactivityMs) have passed; a verification token once its
 * `expires_at` has. Rows go in batches, so a large backlog neither holds many row locks at once
 * nor runs into the statement timeout. Each batch finds its rows with a scan of the table (there
 * is no index on the expiry columns: the sweep runs rarely, and an index on last_verified_at
 * would cost every hourly session refresh). The deletes are the stores' (sessions-store.ts,
 * verification-tokens-store.ts); the schedule and what counts as ended are decided here.
 *
 * It also deletes the shared limiters' ended windows and the stream leases that lapsed
 * (sql/0010_rate_limits.sql): both are written by the API, which runs this sweeper, and are ignored
 * once ended, so an hourly sweep only keeps the tables small. The same holds for idempotency keys
 * past their 24 hours (sql/0011_idempotency_keys.sql): the API writes them, a key found expired is
 * started over (idempotency/idempotent-call.ts), so they go here rather than in the queue's
 * housekeeping, which runs in the worker and would tie the API's table to the worker's schedule.
 */
import type { Sql } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import { sessionPolicy } from './sessions.ts';
import { deleteEndedSessions } from './sessions-store.ts';
import { deleteExpiredVerificationTokens } from './verification-tokens-store.ts';
import { deleteEndedWindows } from './shared-rate-limit.ts';
import { deleteLapsedLeases } from '../jobs/stream-leases.ts';
import { deleteExpiredKeys } from '../idempotency/store.ts';
import { IDEMPOTENCY_WINDOW_MS } from '../idempotency/idempotent-call.ts';

/** Rows deleted per statement. */
export const SWEEP_BATCH = 1000;

/** How often the sweeper runs unless told otherwise. */
export const DEFAULT_SWEEP_INTERVAL_MS = 3600_000;

export interface SweepResult {
  sessions: number;
  verificationTokens: number;
  /** Ended windows of the limiters kept in the database. */
  rateLimits: number;
  /** jobs.stream leases whose instance stopped refreshing them. */
  streamLeases: number;
  /** Idempotency keys first used over 24 hours ago. */
  idempotencyKeys: number;
}

/** Deletes the sessions, verification tokens, limiter windows, stream leases and idempotency keys that have expired at `now`; answers how many of each. */
export async function sweepExpired(sql: Sql, now: Date, batch: number = SWEEP_BATCH): Promise<SweepResult> {
  const idleSince = new Date(now.getTime() - sessionPolicy.inactivityMs);
  const sessions = await inBatches(batch, async (limit) => ({ count: await deleteEndedSessions(sql, { now, idleSince, limit }) }));
  const verificationTokens = await inBatches(batch, async (limit) => ({ count: await deleteExpiredVerificationTokens(sql, now, limit) }));
  const rateLimits = await inBatches(batch, (limit) => deleteEndedWindows(sql, now, limit));
  // Leases run on the database's clock (stream-leases.ts).
  const streamLeases = await inBatches(batch, (limit) => deleteLapsedLeases(sql, limit));
  const keptSince = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS);
  const idempotencyKeys = await inBatches(batch, (limit) => deleteExpiredKeys(sql, keptSince, limit));
  return { sessions, verificationTokens, rateLimits, streamLeases, idempotencyKeys };
}

async function inBatches(batch: number, deleteSome: (limit: number) => Promise<{ count: number }>): Promise<number> {
  let total = 0;
  for (;;) {
    const { count } = await deleteSome(batch);
    total += count;
    if (count < batch) return total;
  }
}

export interface ExpiredSweeperOptions {
  sql: Sql;
  /** The clock (services.now). */
  now: () => Date;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Time between runs; default one hour. */
  intervalMs?: number;
  /** The first run waits for this to settle (`serve`: its job queue's start); default: it runs at once. */
  firstRunAfter?: Promise<unknown>;
}

export interface ExpiredSweeper {
  /** Stops the timer and waits for a run in progress (call it before closing the database). */
  stop(): Promise<void>;
  /** Runs a sweep now (unless one is running) and resolves when it is done; never rejects. */
  runNow(): Promise<void>;
}

/**
 * Sweeps once at once (or once `firstRunAfter` has settled), then every `intervalMs`. The timer is
 * unref'd (it keeps no process alive), runs never overlap, and a failed run is logged and retried
 * at the next interval.
 */
export function startExpiredSweeper(options: ExpiredSweeperOptions): ExpiredSweeper {
  const intervalMs = options.intervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
  if (!Number.isSafeInteger(intervalMs) || intervalMs <= 0) throw new RangeError(`intervalMs must be a positive integer, got ${intervalMs}`);
  let running: Promise<void> | undefined;
  let stopped = false;

  const run = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    running ??= (async () => {
      const started = performance.now();
      try {
        const deleted = await sweepExpired(options.sql, options.now());
        if (Object.values(deleted).some((count) => count > 0)) {
          options.logger.info({ deleted, ms: Math.round(performance.now() - started) }, 'expired sessions and tokens deleted');
        }
      } catch (error) {
        options.logger.warn({ err: error }, 'sweeping expired sessions and tokens failed');
      } finally {
        running = undefined;
      }
    })();
    return running;
  };

  const timer = setInterval(() => void run(), intervalMs);
  timer.unref();
  if (options.firstRunAfter) void options.firstRunAfter.then(run, run);
  else void run();

  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
    runNow: run,
  };
}

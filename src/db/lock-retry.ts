// Short lock waits, retried (docs/migrations.md, "The runner"). A schema change takes a lock that
// conflicts with reads and writes, and PostgreSQL queues every later request of that table behind
// a lock that waits: a migration stuck behind one long transaction stops all traffic on the table
// for as long as that transaction runs. Under a short lock_timeout the migration gives up instead,
// lets the queue drain, and tries again, each time waiting a little longer for the lock and
// pausing longer between tries (GitLab's lock retries start at about 100 ms the same way).
import type postgres from 'postgres';

export interface LockRetry {
  /** lock_timeout of the first try, in ms; it doubles with each try up to `maxTimeoutMs`. */
  firstTimeoutMs: number;
  maxTimeoutMs: number;
  /** Tries before the migration fails. */
  attempts: number;
  /** Pause after the first failed try, in ms; it doubles up to `maxPauseMs`, with jitter. */
  pauseMs: number;
  maxPauseMs: number;
}

/**
 * About five minutes of tries before giving up; no request waits behind a try for more than a
 * second (the longest lock_timeout).
 */
export const DEFAULT_LOCK_RETRY: LockRetry = { firstTimeoutMs: 100, maxTimeoutMs: 1_000, attempts: 40, pauseMs: 250, maxPauseMs: 10_000 };

/** lock_not_available: the lock_timeout ran out. */
const LOCK_TIMEOUT = '55P03';

export function isLockTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === LOCK_TIMEOUT;
}

export interface LockWait {
  attempt: number;
  lockTimeoutMs: number;
  pauseMs: number;
  /** The oldest open transactions of the database, the likely holders of the lock. */
  blockers: string[];
}

/**
 * Runs `attempt(lockTimeoutMs)` until it does not fail for a lock timeout. `sql` (a session of its
 * own) is used between tries to name the oldest open transactions, for the log and the final error.
 */
export async function withLockRetry<T>(sql: postgres.Sql, retry: LockRetry, attempt: (lockTimeoutMs: number) => Promise<T>, onWait?: (wait: LockWait) => void): Promise<T> {
  for (let index = 0; ; index++) {
    const lockTimeoutMs = Math.min(retry.firstTimeoutMs * 2 ** index, retry.maxTimeoutMs);
    try {
      return await attempt(lockTimeoutMs);
    } catch (error) {
      if (!isLockTimeout(error)) throw error;
      const blockers = await oldestTransactions(sql).catch(() => []);
      if (index + 1 >= retry.attempts) {
        throw new Error(
          `could not take its locks in ${retry.attempts} tries (lock_timeout up to ${retry.maxTimeoutMs} ms)` + (blockers.length > 0 ? `; the oldest open transactions: ${blockers.join('; ')}` : ''),
          { cause: error },
        );
      }
      const pauseMs = Math.round(Math.min(retry.pauseMs * 2 ** index, retry.maxPauseMs) * (0.5 + Math.random() / 2));
      onWait?.({ attempt: index + 1, lockTimeoutMs, pauseMs, blockers });
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
}

async function oldestTransactions(sql: postgres.Sql): Promise<string[]> {
  const rows = await sql<{ pid: number; seconds: number; state: string | null; query: string | null }[]>`
    select pid, round(extract(epoch from now() - xact_start)::numeric, 1)::float8 as seconds, state, left(query, 120) as query
    from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and xact_start is not null and xact_start < now() - interval '1 second'
    order by xact_start
    limit 3`;
  return rows.map((row) => `pid ${row.pid}, open ${row.seconds} s, ${row.state ?? 'unknown'}: ${row.query ?? ''}`);
}

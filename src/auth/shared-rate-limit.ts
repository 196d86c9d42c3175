/**
 * Limiters kept in PostgreSQL (the `rate_limits` table, sql/0010_rate_limits.sql), used when the
 * service runs on a database server: every API instance counts in the same row, so two instances
 * together allow exactly what one allows (architecture.md, Scale-out). On the embedded database
 * (one process) the in-memory limiter of rate-limit.ts does the same without a query.
 *
 * A hit is one statement, atomic under concurrency: insert the key's row, or count one more in its
 * window, or start a new window when the old one has ended. The window is fixed and starts at the
 * key's first hit after the previous one ended, as in memory, so a burst never straddles a
 * boundary that every key shares. Windows run on the service clock (`now`), like sessions.
 */
import type { Database, Sql } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import { createRateLimiter, memoryLimiters, retryAfter, type LimiterFactory, type RateLimit, type RateLimiter } from './rate-limit.ts';
import { withDeadline } from '../db/deadline.ts';

/** How long one hit may wait for the database (a connection included) before this process's count decides. */
const LIMITER_DEADLINE_MS = 1000;

interface LimiterOptions {
  sql: Sql;
  /** The service clock in milliseconds. */
  now: () => number;
  logger: Pick<Logger, 'warn'>;
}

/** The limiters of an app: in PostgreSQL on a database server, in memory on the embedded database. */
export function rateLimiters(options: { db: Database; now: () => number; logger: Pick<Logger, 'warn'> }): LimiterFactory {
  if (options.db.kind === 'embedded') return memoryLimiters(options.now);
  return sharedLimiters({ sql: options.db.sql, now: options.now, logger: options.logger });
}

export function sharedLimiters(options: LimiterOptions): LimiterFactory {
  return (name, limit) => createSharedRateLimiter(name, limit, options);
}

/**
 * One limiter whose counts live in `rate_limits` under `name`, and in this process too: every hit
 * is also counted by an in-memory limiter of the same budget, and when the database cannot count a
 * hit in time (unreachable, the statement or its wait for a pool connection passed the deadline)
 * that count decides. So a limit never turns off under database pressure (issue 23: while the pool
 * was saturated every hit was let through uncounted, sign-in's included, while password checks
 * still ran); it only stops being shared: each instance allows the budget on its own until the
 * database answers again (docs/rate-limits.md). Refusing instead would turn a database outage into
 * 429s on routes that need no database; the in-process count refuses exactly the floods.
 */
function createSharedRateLimiter(name: string, limit: RateLimit, options: LimiterOptions): RateLimiter {
  const { sql } = options;
  const inProcess = createRateLimiter({ ...limit, now: options.now });
  return {
    async hit(key) {
      const time = options.now();
      const now = new Date(time);
      // Counted before the query is sent: the process's count must see the hits the database did too.
      const local = await inProcess.hit(key);
      let row: { count: number; resets_at: Date } | undefined;
      try {
        // A short deadline of its own: while the database hangs, this process's count decides after a
        // second, leaving the rest of the request's deadline to the work that needs the database.
        [row] = await withDeadline(
          LIMITER_DEADLINE_MS,
          async () =>
            await sql<{ count: number; resets_at: Date }[]>`
          insert into rate_limits as r (limiter, key, count, resets_at)
          values (${name}, ${key}, 1, ${new Date(time + limit.windowMs)})
          on conflict (limiter, key) do update set
            count = case when r.resets_at <= ${now} then 1 else r.count + 1 end,
            resets_at = case when r.resets_at <= ${now} then excluded.resets_at else r.resets_at end
          returning count, resets_at`,
        );
      } catch (error) {
        options.logger.warn({ err: error, limiter: name, allowed: local.allowed }, "rate limit not counted in the database: this process's count decides");
        return local;
      }
      if (row!.count <= limit.limit) return { allowed: true };
      return { allowed: false, retryAfterSeconds: retryAfter(row!.resets_at.getTime(), time) };
    },
  };
}

/**
 * Deletes windows that ended at `now` (the hourly sweeper, expired-sweeper.ts), at most `limit`;
 * answers how many went. A window renewed meanwhile is kept (the outer condition is checked again
 * on the row it would delete).
 */
export async function deleteEndedWindows(sql: Sql, now: Date, limit: number): Promise<{ count: number }> {
  return sql`
    delete from rate_limits r
    using (select limiter, key from rate_limits where resets_at <= ${now} limit ${limit}) ended
    where r.limiter = ended.limiter and r.key = ended.key and r.resets_at <= ${now}`;
}

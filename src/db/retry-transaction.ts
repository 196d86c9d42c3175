/**
 * A transaction that PostgreSQL may abort for reasons that are nobody's fault: chosen as a
 * deadlock's victim (40P01) or failing serialization (40001). Run again from the start it
 * usually succeeds, so the caller gets its answer instead of a 500. Only for callbacks that do
 * nothing but database work on `tx` (no mail, no storage, no events before the commit): those
 * are the ones a second run cannot do twice.
 */
import type postgres from 'postgres';
import type { Sql } from './connection.ts';
import { isRetryableConflict } from './errors.ts';
import { asAttempt } from './query-spans.ts';
import { tracingOn } from '../telemetry/tracing.ts';

/** Runs in all, the first included. */
const ATTEMPTS = 5;

export async function retryingTransaction<T>(sql: Sql, run: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      // While tracing is on, each run's db.transaction span says which run it is.
      return (await (tracingOn() ? asAttempt(attempt, () => sql.begin(run)) : sql.begin(run))) as T;
    } catch (error) {
      if (attempt >= ATTEMPTS || !isRetryableConflict(error)) throw error;
      // A short random pause, growing: the transactions that collided should not collide again.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * 2 ** attempt));
    }
  }
}

/**
 * Client-side deadlines on database calls. A server-side statement_timeout cannot fire when the
 * server does not run (a stopped process, a partition: measured, a request hung 8 s and more while
 * its connection stayed open), so every query and every transaction sent through `Database.sql`
 * also has a deadline here: when it passes, the caller gets a DatabaseDeadlineError at once (the
 * HTTP layer answers 503 SERVICE_UNAVAILABLE) and the query is dealt with behind it (armQuery).
 *
 * The deadline of a call is that of its scope. Outside any scope it is the database's default,
 * DB_DEADLINE_MS, meant for API requests; `withDeadline` gives a different one to everything a
 * piece of work does: the job worker runs in a DB_JOB_DEADLINE_MS scope, migrations in one without
 * a deadline. A scope (AsyncLocalStorage) rather than a parameter because the deadline belongs to
 * the caller's kind of work, not to the store function: the same `findDocument` runs for a request
 * and for a job, and threading a deadline through every store signature would touch them all for
 * something none of them decides. The scope follows the async flow, so a worker loop started
 * inside one (pg-boss's fetch loop, and the deliveries it runs) stays in it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** A scope whose calls have no deadline (migrations). */
export const NO_DEADLINE = 0;

/**
 * How long a query (or a transaction) that passed its deadline may stay unanswered by its
 * connection, after the cancel request, before the server is suspected (DeadlineActions.suspect).
 * A live server answers a cancel within milliseconds.
 */
export const ANSWER_GRACE_MS = 1000;

const scope = new AsyncLocalStorage<number>();

/**
 * Runs `fn` with `ms` as the deadline of each database call it makes (0: none) instead of the
 * database's default. `fn` must send its queries itself (an async function awaiting them): a
 * postgres.js query is sent when first awaited, in the scope of whoever awaits it.
 */
export function withDeadline<T>(ms: number, fn: () => T): T {
  return scope.run(ms, fn);
}

/** The deadline of the scope the caller runs in; undefined outside any scope. */
export function scopedDeadline(): number | undefined {
  return scope.getStore();
}

export class DatabaseDeadlineError extends Error {
  override name = 'DatabaseDeadlineError';
  readonly code = 'DATABASE_DEADLINE';
  readonly deadlineMs: number;
  constructor(what: string, deadlineMs: number) {
    super(`${what} did not finish within its deadline (${deadlineMs} ms); the database did not answer in time.`);
    this.deadlineMs = deadlineMs;
  }
}

/**
 * The parts of a postgres.js 3.4 query (src/query.js) a deadline uses: its settle functions,
 * `state` (the backend key of the connection that took it; null while it waits for one), its
 * canceller, and its text, which is replaced when it was never sent.
 */
export interface DeadlineQuery {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  state: unknown;
  canceller: ((query: never) => Promise<void>) | null;
  strings: readonly string[];
  args: unknown[];
}

export interface DeadlineActions {
  /** Send a cancel request for a statement that passed its deadline (not on the embedded database: it serves one connection). */
  cancel: boolean;
  /**
   * The server may have stopped answering: a query waited its whole deadline for a connection (none
   * free, or the new ones cannot finish their start-up), or a connection took a query and answered
   * nothing, not even its cancel, ANSWER_GRACE_MS after its deadline (the same for a transaction).
   */
  suspect?: () => void;
}

/** What a query that never reached a connection is sent as, if a connection takes it later. */
const NOTHING = Object.assign(['select null'], { raw: ['select null'] });

/**
 * Gives a query about to be sent a deadline of `ms` (none when 0); `what` names it in the error.
 * When it passes:
 * - the caller's promise rejects with a DatabaseDeadlineError;
 * - a query still waiting for a connection becomes `select null`: postgres.js has no safe way to
 *   take it out of its queues (its own cancel skips the query without sending anything, which
 *   stalls a transaction's queue and strands a connecting connection), and a write must not run
 *   long after its caller was told it failed; the server is suspected;
 * - a query a connection took gets a cancel request (a live server stops the statement; inside a
 *   transaction the callback then fails and postgres.js rolls back), and if its connection has
 *   still not answered ANSWER_GRACE_MS later, the server is suspected.
 * A statement the server had already received may still complete: the caller's error means "not
 * known to have happened", as with any timeout.
 */
export function armQuery(query: DeadlineQuery, ms: number, what: () => string, actions: DeadlineActions): void {
  if (!(ms > 0)) return;
  const settle = { resolve: query.resolve, reject: query.reject };
  let answered = false;
  const timer = setTimeout(expire, ms);
  timer.unref();
  const resolve = (value: unknown) => {
    answered = true;
    clearTimeout(timer);
    settle.resolve(value);
  };
  const reject = (error: unknown) => {
    answered = true;
    clearTimeout(timer);
    settle.reject(error);
  };
  query.resolve = resolve;
  query.reject = reject;

  function expire(): void {
    // A cursor replaces the settle functions on every step: it is not followed (none is used here).
    if (query.resolve !== resolve || query.reject !== reject) return;
    const error = new DatabaseDeadlineError(what(), ms);
    const taken = query.state != null;
    if (!taken) {
      query.strings = NOTHING;
      query.args = [];
    } else if (actions.cancel) {
      // Before rejecting: postgres.js cancels only a query it still marks active.
      cancelStatement(query);
    }
    settle.reject(error);
    const { suspect } = actions;
    if (!suspect) return;
    if (!taken) suspect();
    else setTimeout(() => answered || suspect(), ANSWER_GRACE_MS).unref();
  }
}

/**
 * postgres.js's cancel request, over a connection of its own. Called directly because
 * `query.cancel()` drops the promise it makes, and that promise rejects when the server refuses
 * the connection (an unhandled rejection ends the process).
 */
function cancelStatement(query: DeadlineQuery): void {
  const cancel = query.canceller;
  if (typeof cancel !== 'function') return;
  query.canceller = null;
  cancel(query as never).catch(() => undefined);
}

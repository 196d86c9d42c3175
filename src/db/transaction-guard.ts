/**
 * Two protections around postgres.js transactions (`sql.begin(async (tx) => ...)`).
 *
 * 1. The guard (outside production, config.database.transactionGuard). Inside a transaction only
 *    `tx` may be used. A query sent on the pool there waits for a free connection while the
 *    transaction holds one: on the embedded database (one connection) it waits forever, on a server
 *    it takes a second connection and can deadlock with the first (architecture.md, Database). With
 *    the guard, a pool query *executed* from inside an open transaction's callback (the same async
 *    flow, followed by AsyncLocalStorage) rejects at once with TransactionGuardError, and so do the
 *    pool's `begin`, `reserve`, `notify` and `largeObject`. Still allowed: everything on `tx`;
 *    building pool fragments and helpers (`sql\`...\``, `sql(rows)`, `sql.unsafe(...)` placed inside
 *    a `tx` query: only executing one is refused); pool queries of other requests while a
 *    transaction is open; pool queries after the callback has settled, even from timers it started.
 *
 * 2. Always: a transaction whose connection is lost (the server ended the session, for example
 *    idle_in_transaction_session_timeout, or the network dropped) sends nothing more. postgres.js
 *    3.4.9 rejects `begin` at once but lets the callback go on, and the callback's next query (or
 *    the COMMIT/ROLLBACK after it) is written either to the dead socket, which throws from a
 *    setImmediate and ends the process (porsager/postgres #1154, #1208), or, once the pool has
 *    reconnected that connection, to a fresh session outside any transaction. Here such a query
 *    rejects with TransactionLostError, and the transaction's end is never sent.
 *
 * 3. Deadlines (deadline.ts), when given: every pool query, and every transaction as a whole, gets
 *    the deadline of its scope (or `deadlineMs`). A query inside a transaction gets what is left of
 *    the transaction's. Once a transaction's deadline has passed its caller has the
 *    DatabaseDeadlineError, its later queries are refused with one, and it is rolled back, never
 *    committed, whatever its callback answers.
 *
 * 4. Server settings per transaction, when given (`transactionSettings`: a transaction-mode pooler,
 *    connection.ts openServer): the transaction's first statement sets them with set_config(...,
 *    is_local true), so they hold for this transaction and end with it, on whichever server
 *    connection the pooler lent.
 *
 * 5. Commit markers (commit-marker.ts): a top-level, writable transaction begun in a marker's scope
 *    writes the marker last, before its COMMIT, so its outcome can be read back when the COMMIT's
 *    answer is lost.
 *
 * 6. Spans, when given and while tracing is on (query-spans.ts): a `db.transaction` span per
 *    transaction, a `db.query` span per statement sent.
 *
 * 7. Background work (request-gate.ts `asBackground`: a job's run on the embedded database): each
 *    pool statement and each transaction it starts waits at the request gate first, so the API's
 *    requests in flight have the one connection to themselves. A transaction's own statements do
 *    not wait: it already holds the connection.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type postgres from 'postgres';
import { currentCommitMarker, type CommitMarker } from './commit-marker.ts';
import { backgroundGate } from './request-gate.ts';
import { ANSWER_GRACE_MS, armQuery, DatabaseDeadlineError, scopedDeadline, type DeadlineActions, type DeadlineQuery } from './deadline.ts';
import { traceQuery, traceTransaction, type QuerySpanSettings } from './query-spans.ts';
import { tracingOn } from '../telemetry/tracing.ts';

type Sql = postgres.Sql;
type TransactionSql = postgres.TransactionSql;

export class TransactionGuardError extends Error {
  override name = 'TransactionGuardError';
}

export class TransactionLostError extends Error {
  override name = 'TransactionLostError';
}

interface TransactionState {
  /** The callback has not settled yet. */
  open: boolean;
  /** `begin` failed while the callback ran: the connection is gone. */
  lost: boolean;
  /** The transaction's deadline in milliseconds (0: none), and when it passes (performance.now()). */
  deadlineMs: number;
  endsAt: number;
  /** Set when the deadline has passed: what the caller was answered. */
  expired: DatabaseDeadlineError | null;
  /** The pool's span settings (item 6); undefined: none. */
  spans: QuerySpanSettings | undefined;
}

const transactions = new AsyncLocalStorage<TransactionState>();

/** True while the caller runs inside the callback of a transaction begun on a guarded pool. */
export function insideTransaction(): boolean {
  return transactions.getStore()?.open === true;
}

const ADVICE =
  'Inside sql.begin(async (tx) => ...) use only tx: the pool would need a second connection while the transaction holds one (on the embedded database it waits forever; on a server it can deadlock). Look things up before the transaction or pass tx.';

function violation(what: string): TransactionGuardError {
  return new TransactionGuardError(`${what} called on the pool inside an open transaction. ${ADVICE}`);
}

/** The part of a query a message can show: its text, shortened. */
function describeQuery(query: { strings?: readonly string[] }): string {
  const text = (query.strings ?? []).join('$?').replace(/\s+/g, ' ').trim();
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/**
 * A pending postgres.js query. It is sent when first awaited (`then`), `execute()`d, iterated or
 * `forEach`ed, and every one of those goes through `query.handler`, called in the async context of
 * whoever started it. Replacing the handler of one query checks at that moment; a query only
 * embedded as a fragment of another is never handled.
 */
interface PendingQuery extends DeadlineQuery {
  handler: (query: PendingQuery) => unknown;
  /** postgres.js reads `onexecute` once the query is written: a connection whose query answers false takes no other until it is done. */
  options?: { onexecute?: (connection: unknown) => boolean };
}

/** No other query is pipelined behind this one on its connection (WrapPoolOptions.serial); `begin`'s own onexecute (it reserves the connection) is kept. */
function alone(query: PendingQuery): void {
  if (query.options?.onexecute) return;
  query.options = { ...query.options, onexecute: () => false };
}

/**
 * Runs `check` when the query is sent: an error refuses it; otherwise it goes (`check` may arm its
 * deadline), after what `wait` answers when it answers something.
 */
function beforeSend<T>(query: T, check: (query: PendingQuery) => Error | null, wait?: () => Promise<void> | undefined): T {
  const pending = query as unknown as PendingQuery;
  if (typeof pending?.handler !== 'function' || typeof pending.reject !== 'function') return query;
  const send = pending.handler;
  pending.handler = (self) => {
    const error = check(self);
    if (error) {
      self.reject(error);
      return undefined;
    }
    const waiting = wait?.();
    if (!waiting) return send(self);
    void waiting.then(() => send(self));
    return undefined;
  };
  return query;
}

function isTemplate(args: unknown[]): boolean {
  const strings = args[0] as { raw?: unknown } | undefined;
  return Array.isArray(strings) && Array.isArray(strings.raw);
}

type AnyFunction = (...args: unknown[]) => unknown;

/** Never settles: answered to postgres.js for a lost transaction, so it sends no COMMIT or ROLLBACK. */
const never = () => new Promise<never>(() => {});

/**
 * Runs a transaction or savepoint callback with `tx` wrapped; `done` runs once it settles. An
 * answered array of queries is awaited here as postgres.js would (Promise.all).
 */
function runCallback(fn: AnyFunction, tx: TransactionSql, state: TransactionState, actions: DeadlineActions, done: () => void, marker?: CommitMarker): Promise<unknown> {
  let answer: unknown;
  const wrapped = wrapTransaction(tx, state, actions);
  try {
    answer = fn(wrapped);
  } catch (error) {
    done();
    return state.lost ? never() : Promise.reject(state.expired ?? error);
  }
  const settled = Array.isArray(answer) ? Promise.all(answer) : Promise.resolve(answer);
  // The commit marker (commit-marker.ts) goes last, after the work and right before the COMMIT
  // postgres.js sends once this settles; not in a transaction that is being rolled back anyway.
  const marked = marker
    ? settled.then((value) => {
        if (state.lost || state.expired) return value;
        return marker.write(wrapped).then(() => value);
      })
    : settled;
  // Past its deadline a transaction is rolled back even when its callback succeeded: its caller
  // was told it failed.
  return marked.then(
    (value) => {
      done();
      return state.lost ? never() : state.expired ? Promise.reject(state.expired) : value;
    },
    (error: unknown) => {
      done();
      return state.lost ? never() : Promise.reject(state.expired ?? error);
    },
  );
}

/** postgres.js's own codes for a connection that is gone, and a server error that ended the session. */
function endsConnection(error: unknown): boolean {
  const e = error as { code?: unknown; severity?: unknown } | null;
  return (typeof e?.code === 'string' && e.code.startsWith('CONNECTION_')) || e?.severity === 'FATAL' || e?.severity === 'PANIC';
}

/**
 * `tx` (or a savepoint's) whose queries are refused once the transaction's connection is lost or
 * its deadline has passed, and otherwise get what is left of that deadline.
 */
function wrapTransaction(tx: TransactionSql, state: TransactionState, actions: DeadlineActions): TransactionSql {
  const refusal = (query: PendingQuery) => {
    if (state.lost) return new TransactionLostError(`The transaction's connection was lost (the transaction was rolled back); not sending: ${describeQuery(query)}`);
    const left = state.endsAt - performance.now();
    if (state.expired || left <= 0) return new DatabaseDeadlineError('A transaction', state.deadlineMs);
    if (state.deadlineMs > 0) armQuery(query, Math.ceil(left), () => `A query of a transaction (${describeQuery(query)})`, actions);
    if (state.spans && tracingOn()) traceQuery(query, state.spans);
    return null;
  };
  // Registered when the query is made, so it runs before the callback's own continuation: a
  // callback that catches the failure and sends another query finds `lost` already set.
  const watch = <T>(query: T): T => {
    if (query instanceof Promise) {
      // A second listener beside the caller's own: its promise never rejects (the handler does not throw).
      void Promise.prototype.then.call(query, undefined, (error: unknown) => {
        if (endsConnection(error)) state.lost = true;
      });
    }
    return beforeSend(query, refusal);
  };
  const replaced: Record<PropertyKey, unknown> = {
    unsafe: (...args: unknown[]) => watch((tx.unsafe as AnyFunction)(...args)),
    file: (...args: unknown[]) => watch((tx.file as AnyFunction)(...args)),
    savepoint: (...args: unknown[]) => {
      const fn = args.at(-1);
      // The tagged form (tx.savepoint`...`) is rare; it is passed through unwrapped.
      if (typeof fn !== 'function') return (tx.savepoint as AnyFunction)(...args);
      return (tx.savepoint as AnyFunction)(...args.slice(0, -1), (sp: TransactionSql) => runCallback(fn as AnyFunction, sp, state, actions, () => {}));
    },
  };
  return new Proxy(tx, {
    apply(target, thisArg, args: unknown[]) {
      const made: unknown = Reflect.apply(target, thisArg, args);
      return isTemplate(args) ? watch(made) : made;
    },
    get(target, property, receiver) {
      if (Object.hasOwn(replaced, property)) return replaced[property];
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
}

export interface WrapPoolOptions {
  /** Refuse pool queries inside an open transaction (protection 1). */
  guard: boolean;
  /** The deadline of calls outside any `withDeadline` scope, in milliseconds (protection 3); 0 or none: no deadline. */
  deadlineMs?: number;
  /** What happens to a query whose deadline passed (deadline.ts). */
  deadlineActions?: DeadlineActions;
  /** Server parameters (name: value) set for each transaction as its first statement (protection 4). */
  transactionSettings?: Record<string, string>;
  /** One query at a time per connection of the pool: none pipelined behind another (connection.ts says why a pooler needs it). */
  serial?: boolean;
  /** Spans of its transactions and statements while tracing is on (item 6; query-spans.ts); none without. */
  spans?: QuerySpanSettings;
}

/**
 * `fn` preceded by one statement setting `settings` for the transaction only. A callback may answer
 * an array of queries (postgres.js then awaits them all); it is awaited the same way here.
 */
function withSettings(fn: AnyFunction, settings: Record<string, string> | undefined): AnyFunction {
  const entries = Object.entries(settings ?? {});
  if (entries.length === 0) return fn;
  const text = `select ${entries.map((_, i) => `set_config($${2 * i + 1}, $${2 * i + 2}, true)`).join(', ')}`;
  const values = entries.flat();
  return async (tx: unknown) => {
    await (tx as TransactionSql).unsafe(text, values);
    const answer = fn(tx);
    return Array.isArray(answer) ? Promise.all(answer) : answer;
  };
}

/**
 * Wraps a postgres.js pool. The answer behaves like `sql` (same options, helpers, `end`) apart
 * from the protections above.
 */
export function wrapPool(sql: Sql, options: WrapPoolOptions): Sql {
  const actions: DeadlineActions = options.deadlineActions ?? { cancel: false };
  const deadline = () => scopedDeadline() ?? options.deadlineMs ?? 0;
  const begin = (...args: unknown[]): Promise<unknown> => {
    // Protection 7; inside a transaction guardedBegin refuses it at once.
    const gate = insideTransaction() ? undefined : backgroundGate();
    return gate ? gate.waitForIdle().then(() => spannedBegin(...args)) : spannedBegin(...args);
  };
  const spannedBegin = (...args: unknown[]): Promise<unknown> => {
    const { spans } = options;
    if (spans && tracingOn()) return traceTransaction(spans, args.length > 1 ? args[0] : undefined, () => guardedBegin(...args));
    return guardedBegin(...args);
  };
  const guardedBegin = (...args: unknown[]): Promise<unknown> => {
    if (options.guard && insideTransaction()) return Promise.reject(violation('sql.begin()'));
    const fn = withSettings(args.at(-1) as AnyFunction, options.transactionSettings);
    const deadlineMs = deadline();
    const state: TransactionState = {
      open: true,
      lost: false,
      deadlineMs,
      endsAt: deadlineMs > 0 ? performance.now() + deadlineMs : Infinity,
      expired: null,
      spans: options.spans,
    };
    const done = () => {
      state.open = false;
    };
    // A read-only transaction writes nothing, so it has no outcome to mark (and could not write it).
    const marker = args.length === 1 || !/read\s+only/i.test(String(args[0])) ? currentCommitMarker() : undefined;
    const inside = options.guard
      ? (tx: TransactionSql) => transactions.run(state, () => runCallback(fn, tx, state, actions, done, marker))
      : (tx: TransactionSql) => runCallback(fn, tx, state, actions, done, marker);
    const begun = (sql.begin as (...rest: unknown[]) => Promise<unknown>)(...args.slice(0, -1), inside);
    // begin settles before the callback only when the connection closed under it.
    begun.catch(() => {
      if (state.open) state.lost = true;
    });
    if (!(deadlineMs > 0)) return begun;
    // The caller's answer comes by the deadline; the transaction itself ends behind it (rolled
    // back once its callback settles; its query on the wire was cancelled by its own deadline).
    // Its BEGIN and COMMIT are postgres.js's own, with no deadline of their own: one that is still
    // unanswered a grace period later makes the server suspect.
    let settled = false;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        state.expired = new DatabaseDeadlineError('A transaction', deadlineMs);
        reject(state.expired);
        const { suspect } = actions;
        if (suspect) setTimeout(() => settled || suspect(), ANSWER_GRACE_MS).unref();
      }, deadlineMs);
      timer.unref();
      begun.then(
        (value) => {
          settled = true;
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          settled = true;
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  };
  const replaced: Record<PropertyKey, unknown> = { begin };

  const check = (query: PendingQuery) => {
    if (options.guard && insideTransaction()) return violation(`A query (${describeQuery(query)})`);
    armQuery(query, deadline(), () => `A query (${describeQuery(query)})`, actions);
    if (options.serial) alone(query);
    if (options.spans && tracingOn()) traceQuery(query, options.spans);
    return null;
  };
  if (options.guard) {
    const refuseInside =
      (name: string) =>
      (...args: unknown[]): Promise<unknown> => {
        if (insideTransaction()) return Promise.reject(violation(`sql.${name}()`));
        return (sql[name as keyof Sql] as (...rest: unknown[]) => Promise<unknown>)(...args);
      };
    replaced.reserve = refuseInside('reserve');
    replaced.notify = refuseInside('notify');
    replaced.largeObject = refuseInside('largeObject');
  }
  // Protection 7: a background statement waits at the gate (a refused one, inside a transaction, never gets here).
  const wait = () => backgroundGate()?.waitForIdle();
  replaced.unsafe = (...args: unknown[]) => beforeSend((sql.unsafe as AnyFunction)(...args), check, wait);
  replaced.file = (...args: unknown[]) => beforeSend((sql.file as AnyFunction)(...args), check, wait);

  return new Proxy(sql, {
    // sql`...` makes a query; sql('name') and sql(rows) make helpers, which send nothing.
    apply(target, thisArg, args: unknown[]) {
      const made: unknown = Reflect.apply(target, thisArg, args);
      return isTemplate(args) ? beforeSend(made, check, wait) : made;
    },
    get(target, property, receiver) {
      if (Object.hasOwn(replaced, property)) return replaced[property];
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
}

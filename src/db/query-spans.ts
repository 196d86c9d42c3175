/**
 * Spans of the database (issue 41, docs/observability.md). postgres.js has no instrumentation, so
 * transaction-guard.ts, which already sees every transaction begun on the pool and every statement
 * sent through the pool or a transaction's `tx`, calls these: a `db.transaction` span per
 * transaction, and a `db.query` span per statement, the child of whatever span was active where it
 * was sent (inside a transaction's callback, the transaction's). Its callers check `tracingOn()`
 * first, so while tracing is off none of this runs.
 *
 * Attribute names follow OpenTelemetry's database conventions (db.system.name, db.operation.name,
 * db.response.status_code, ...). Never a statement's parameters. Its text only when asked for
 * (`queryText`), and then as the code wrote it, each interpolated value a `$n`. An error is named by
 * its SQLSTATE or its type, never its message: PostgreSQL's messages can quote a value
 * (`invalid input syntax for type integer: "..."`).
 */
import { context, createContextKey, SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { tracer } from '../telemetry/tracing.ts';

/** What every span of one pool carries, and whether its statements' text is recorded. */
export interface QuerySpanSettings {
  attributes: Attributes;
  queryText: boolean;
}

/** The spans' settings of a pool: the embedded database, or the server at `url` (its host, port and database, never its credentials). */
export function querySpanSettings(o: { embedded: boolean; url?: string | undefined; queryText?: boolean | undefined }): QuerySpanSettings {
  const attributes: Attributes = { 'db.system.name': 'postgresql', 'app.db.embedded': o.embedded };
  if (!o.embedded && o.url) {
    try {
      const { hostname, port, pathname } = new URL(o.url);
      if (hostname) attributes['server.address'] = hostname;
      attributes['server.port'] = Number(port || 5432);
      const database = decodeURIComponent(pathname.slice(1));
      if (database) attributes['db.namespace'] = database;
    } catch {
      // A URL postgres.js accepts but URL does not (several hosts): the spans go without it.
    }
  }
  return { attributes, queryText: o.queryText === true };
}

/** The longest statement text recorded (a migration file is sent whole). */
const MAX_TEXT = 2048;

/** The first keyword of a statement, after comments: SELECT, INSERT, WITH, ... */
const FIRST_KEYWORD = /^(?:\s+|--[^\n]*\n?|\/\*[\s\S]*?\*\/)*([a-z]+)/i;

/** The parts of a postgres.js 3.4 query (src/query.js) a span reads; it is a Promise of its result. */
export interface SpannedQuery {
  strings: readonly string[];
}

/**
 * Starts the `db.query` span of a statement being sent; it ends when the statement settles. Its
 * operation is the statement's first keyword, replaced by the command the server reported once it
 * answered (a `with ... insert` is an INSERT).
 */
export function traceQuery(query: SpannedQuery, settings: QuerySpanSettings): void {
  // The attributes are set once, when the statement settles: given at the start, the SDK checks
  // each twice (before and after its sampler), on the request's way.
  const span = tracer.startSpan('db.query', { kind: SpanKind.CLIENT });
  // Not query.then: postgres.js's own `then` would send it (again); this only watches.
  void Promise.prototype.then.call(
    query,
    (result: unknown) => {
      const command = (result as { command?: unknown } | null)?.command;
      const answered = typeof command === 'string' && Array.isArray(result);
      const attributes = statementAttributes(query, settings, answered ? command : undefined);
      if (answered) attributes['db.response.returned_rows'] = result.length;
      span.setAttributes(attributes);
      span.end();
    },
    (error: unknown) => {
      span.setAttributes(statementAttributes(query, settings));
      databaseFailure(span, error);
      span.end();
    },
  );
}

/**
 * The pool's attributes, the statement's text when asked for, and its operation: the command the
 * server reported, else the statement's first keyword.
 */
function statementAttributes(query: SpannedQuery, settings: QuerySpanSettings, command?: string): Attributes {
  const attributes: Attributes = { ...settings.attributes };
  const first = query.strings[0];
  const operation = command ?? (first === undefined ? undefined : FIRST_KEYWORD.exec(first)?.[1]?.toUpperCase());
  if (operation) attributes['db.operation.name'] = operation;
  if (settings.queryText && first !== undefined) attributes['db.query.text'] = statementText(query.strings);
  return attributes;
}

/** The text as written, `$1`, `$2` ... where values (or fragments) were interpolated; a sql.unsafe text is its one string. */
function statementText(strings: readonly string[]): string {
  let text = strings[0] ?? '';
  for (let i = 1; i < strings.length && text.length <= MAX_TEXT; i++) text += `$${i}${strings[i]}`;
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 3)}...` : text;
}

/** retryingTransaction's run number, for the transaction span it begins. */
const ATTEMPT = createContextKey('workspace-api db.transaction attempt');

/** Runs `fn` (which begins one transaction) as run number `attempt` of the same work: its span says so. */
export function asAttempt<T>(attempt: number, fn: () => T): T {
  return context.with(context.active().setValue(ATTEMPT, attempt), fn);
}

/**
 * Runs `begin` (a postgres.js `sql.begin` with the guard's protections) in a `db.transaction`
 * span, ended when its caller has the answer: committed, rolled back, or unknown when the
 * connection was lost on the way (the COMMIT may have happened). `options` is begin's own first
 * argument (`read only`, an isolation level), when given.
 */
export function traceTransaction(settings: QuerySpanSettings, options: unknown, begin: () => Promise<unknown>): Promise<unknown> {
  const attributes: Attributes = { ...settings.attributes };
  if (typeof options === 'string' && options.trim()) attributes['app.db.transaction.options'] = options.replace(/[^a-z ]/gi, '').trim();
  const attempt = context.active().getValue(ATTEMPT);
  if (typeof attempt === 'number') attributes['app.db.transaction.attempt'] = attempt;
  // Its attributes set when it ends, once (as traceQuery's).
  const ended = (span: Span, outcome: 'committed' | 'rolled_back' | 'unknown', failure?: { error: unknown }) => {
    span.setAttributes({ ...attributes, 'app.db.transaction.outcome': outcome });
    if (failure) databaseFailure(span, failure.error);
    span.end();
  };
  return tracer.startActiveSpan('db.transaction', { kind: SpanKind.INTERNAL }, (span) => {
    let begun: Promise<unknown>;
    try {
      begun = begin();
    } catch (error) {
      ended(span, 'rolled_back', { error });
      throw error;
    }
    return begun.then(
      (value) => {
        ended(span, 'committed');
        return value;
      },
      (error: unknown) => {
        ended(span, connectionLost(error) ? 'unknown' : 'rolled_back', { error });
        throw error;
      },
    );
  });
}

/** postgres.js's codes for a connection that went away (CONNECTION_CLOSED, CONNECTION_ENDED, ...). */
function connectionLost(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('CONNECTION_');
}

/**
 * Marks `span` failed by `error`: the server's SQLSTATE (also as db.response.status_code), or
 * postgres.js's or the guard's own code, or the error's type. Never its message.
 */
function databaseFailure(span: Span, error: unknown): void {
  const e = error as { name?: unknown; code?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (e?.name === 'PostgresError' && code) span.setAttribute('db.response.status_code', code);
  const type = code ?? (error instanceof Error ? error.name : typeof error);
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

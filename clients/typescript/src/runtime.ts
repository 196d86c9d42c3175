/**
 * What the generated client (client.ts) runs on: one POST per call to
 * `/rpc/<procedure with dots as slashes>`, the `{ json, meta }` body both ways (wire.ts), one error
 * class, safe retries of network failures (with the same Idempotency-Key on the operations the
 * contract declares it for), and server-sent events as an async iterator for streaming procedures,
 * which reconnects and resumes with Last-Event-Id after a dropped connection.
 *
 * Runs on the platform's fetch only (browsers, Node 20 and later, Deno, Bun, workers): no Node
 * module and no dependency.
 */
import { decode, encode } from './wire.ts';

export interface ClientOptions {
  /** The service's origin, e.g. `http://127.0.0.1:3000` (the client appends `/rpc/...`). */
  baseUrl: string;
  /** A session token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /**
   * A session token sent as the session cookie (the contract's `sessionCookie` scheme) instead of
   * a bearer token, for server-side callers that hold the cookie. Every RPC call is a POST, and a
   * POST with a cookie must carry a trusted `Origin` (the CSRF check): pass it in `headers`.
   */
  sessionCookie?: string;
  /**
   * The fetch `credentials` mode. In a browser, `'include'` sends the session cookie the sign-in
   * set (cookie auth without handling the token); the platform default otherwise.
   */
  credentials?: RequestInit['credentials'];
  /** A fetch implementation; the global one by default. */
  fetch?: typeof fetch;
  /** Extra headers for every call. */
  headers?: Record<string, string>;
  /**
   * How many times a call that is safe to repeat (a read, or an operation that takes an
   * Idempotency-Key) is retried when fetch itself fails (a network failure, not an HTTP error
   * status). Default 3; 0 turns retries off.
   */
  retries?: number;
  /** The delay before the first such retry, in milliseconds, doubled before each next one (default 250). */
  retryDelayMs?: number;
}

/** Per call: every procedure method takes these as its second argument. */
export interface CallOptions {
  /** Aborting it rejects the call with the signal's reason (no retry after that). */
  signal?: AbortSignal;
  /**
   * The Idempotency-Key of an operation that takes one (a random UUID per call by default, kept
   * across the call's retries). Pass your own to repeat a call across processes: the service
   * answers a repeated key with the first answer instead of doing the work twice.
   */
  idempotencyKey?: string;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
}

/**
 * How a procedure may be retried after a network failure, from the contract: `idempotent` takes
 * an Idempotency-Key (sent on every attempt, the same one), `safe` only reads (a GET in REST).
 */
export type RetryPolicy = 'idempotent' | 'safe' | 'none';

/** What the generated client knows from the contract and hands to the runtime. */
export interface ContractFacts {
  /** The name of the session cookie (the contract's `sessionCookie` security scheme). */
  sessionCookie: string;
}

/** The code of the ApiClientError thrown when fetch itself failed, after any retries. */
export const NETWORK_ERROR = 'network_error';

/**
 * Every failed call throws this, whatever the cause: the service's error body (its `code`, `data`
 * and the `x-request-id` of the answer), or a transport failure (code `network_error`, status 0,
 * the fetch error as `cause`).
 */
export class ApiClientError extends Error {
  override name = 'ApiClientError';
  readonly code: string;
  readonly status: number;
  readonly data: unknown;
  readonly defined: boolean;
  readonly requestId: string | undefined;
  /** The answer's Retry-After in seconds (every 429 and 503 of the service sends one), when it had one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: { code: string; status: number; message: string; data?: unknown; defined?: boolean; requestId?: string; retryAfterSeconds?: number; cause?: unknown }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.data = init.data;
    this.defined = init.defined ?? false;
    this.requestId = init.requestId;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

export interface StreamOptions {
  /** Resume after this event id (sent as Last-Event-Id). */
  lastEventId?: string;
  /** Aborting it ends the iterator (its pending `next()` rejects with the signal's reason). */
  signal?: AbortSignal;
  /**
   * Resume after a dropped connection or an `end` with reason `expired`, with Last-Event-Id set
   * to the last id received (default true). With false the iterator follows one connection.
   */
  reconnect?: boolean;
  /** The delay before reconnecting, in milliseconds; by default the server's `retry:` (3000 until it sends one). */
  retryDelayMs?: number;
}

/** The reconnection delay until the server sends `retry:` (decisions.md: the server sends 3000). */
const DEFAULT_RETRY_MS = 3_000;
const DEFAULT_RETRIES = 3;
const DEFAULT_BACKOFF_MS = 250;

export interface StreamEvent<T = unknown> {
  event: string;
  id: string | undefined;
  data: T;
}

/**
 * What a typed stream yields, from the contract's union of messages `{ event, id?, data }`: one
 * member per event name with `data` typed by its schema, and `id` the last event id received (an
 * SSE `id:` carries over to the events after it, so `Last-Event-Id` can resume from any of them).
 * The `error` event is never yielded: the iterator throws it as an ApiClientError.
 */
export type StreamEventOf<Message> = Message extends { event: infer E extends string; data: infer D } ? (E extends 'error' ? never : { event: E; id: string | undefined; data: D }) : never;

/**
 * Per event name the contract declares, the paths of its data's `format: date-time` fields (`*`:
 * any array element or map value), which the client turns into Dates. Events not listed are not
 * declared by the contract and are skipped.
 */
export type StreamDates = Readonly<Record<string, readonly (readonly string[])[]>>;

export function createCaller(options: ClientOptions, contract: ContractFacts) {
  const doFetch = options.fetch ?? globalThis.fetch;
  const base = options.baseUrl.replace(/\/+$/, '');
  const retries = Math.max(0, options.retries ?? DEFAULT_RETRIES);
  const backoffMs = Math.max(0, options.retryDelayMs ?? DEFAULT_BACKOFF_MS);

  function authHeaders(): Record<string, string> {
    if (options.token) return { authorization: `Bearer ${options.token}` };
    if (options.sessionCookie) return { cookie: `${contract.sessionCookie}=${encodeURIComponent(options.sessionCookie)}` };
    return {};
  }

  /** One request; a fetch that throws becomes an ApiClientError `network_error` (an abort stays the signal's reason). */
  /** Errors that replay an answer the service kept for the call's Idempotency-Key. */
  const replayedErrors = new WeakSet<ApiClientError>();

  async function send(procedure: string, input: unknown, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<Response> {
    let response: Response;
    try {
      response = await doFetch(`${base}/rpc/${procedure.replace(/\./g, '/')}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...authHeaders(), ...options.headers, ...headers },
        body: JSON.stringify(encode(input ?? {})),
        signal: signal ?? null,
        ...(options.credentials ? { credentials: options.credentials } : {}),
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new ApiClientError({ code: NETWORK_ERROR, status: 0, message: `${procedure}: ${error instanceof Error ? error.message : String(error)}`, cause: error });
    }
    if (!response.ok) {
      const error = await toError(response);
      if (response.headers.get('idempotent-replayed') === 'true') replayedErrors.add(error);
      throw error;
    }
    return response;
  }

  /**
   * `send`, tried again after a network failure when the policy allows it, with a doubling delay
   * (jittered, so clients cut off together do not come back together). An HTTP error status is
   * never retried here: the service answered.
   */
  async function sendWithRetries(procedure: string, input: unknown, headers: Record<string, string>, signal: AbortSignal | undefined, policy: RetryPolicy): Promise<Response> {
    let lostOne = false;
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await send(procedure, input, headers, signal);
      } catch (error) {
        const network = error instanceof ApiClientError && error.code === NETWORK_ERROR;
        // After a lost connection the first request may still be running on the service: a 409
        // that is not a kept answer (no Idempotent-Replayed) then means "still in progress" and is
        // waited out like the failure itself; a kept answer would carry the header.
        const inProgress = lostOne && policy === 'idempotent' && error instanceof ApiClientError && error.status === 409 && !replayedErrors.has(error);
        if (!(network || inProgress) || policy === 'none' || attempt >= retries) throw error;
        if (network) lostOne = true;
      }
      await sleep(backoffMs * 2 ** attempt * (0.5 + Math.random() / 2), signal);
    }
  }

  return {
    /**
     * One call. `policy` (from the contract, written by codegen) says whether a network failure
     * may be retried, and whether the call carries an Idempotency-Key.
     */
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the generated client (client.ts) types each procedure's answer
    async call(procedure: string, input: unknown, opts: CallOptions = {}, policy: RetryPolicy = 'none'): Promise<any> {
      const headers: Record<string, string> = { ...opts.headers };
      if (policy === 'idempotent') headers['idempotency-key'] = opts.idempotencyKey ?? globalThis.crypto.randomUUID();
      const response = await sendWithRetries(procedure, input, headers, opts.signal, policy);
      return decode(await response.json());
    },
    /**
     * The stream as an async iterator. Unless `reconnect` is false it outlives connections the way
     * an EventSource does: after a dropped connection, or after `end` with reason `expired` (the
     * server's lifetime cut), it waits the server's `retry:` delay and connects again with
     * `Last-Event-Id` set to the last id received, so no retained event is missed or repeated.
     * It finishes after `end` with any other reason (`revoked`: access was lost) and throws an
     * ApiClientError on an `error` event or when a reconnection is answered with an error status.
     */
    async *stream<Event = StreamEvent>(procedure: string, input: unknown, dates: StreamDates, opts: StreamOptions = {}): AsyncGenerator<Event> {
      const reconnect = opts.reconnect ?? true;
      const state: ReadState = { lastEventId: opts.lastEventId, retryMs: DEFAULT_RETRY_MS };
      const open = () => send(procedure, input, { accept: 'text/event-stream', ...(state.lastEventId ? { 'last-event-id': state.lastEventId } : {}) }, opts.signal);
      let response = await open();
      for (;;) {
        try {
          for await (const message of readEvents(response, state)) {
            const data = parseData(message.data);
            if (message.event === 'error' && data && typeof data === 'object') {
              throw new ApiClientError(data as ConstructorParameters<typeof ApiClientError>[0]);
            }
            const paths = Object.hasOwn(dates, message.event) ? dates[message.event] : undefined;
            if (!paths) continue;
            yield { event: message.event, id: message.id, data: reviveDates(data, paths) } as Event;
            if (message.event === 'end') {
              const expired = (data as { reason?: unknown } | null)?.reason === 'expired';
              if (!expired || !reconnect) return;
              break;
            }
          }
        } catch (error) {
          // A connection that dropped mid-stream is resumed below; anything else is the caller's.
          if (error instanceof ApiClientError || !reconnect || opts.signal?.aborted) throw error;
        }
        if (!reconnect) return;
        response = await reopen(open, () => opts.retryDelayMs ?? state.retryMs, opts.signal);
      }
    },
  };

  /**
   * Connects again after the delay. A connection that fails, or a gateway answering 502 to 504
   * (a restart), is tried again after another delay; any other error status is thrown.
   */
  async function reopen(open: () => Promise<Response>, delay: () => number, signal: AbortSignal | undefined): Promise<Response> {
    for (;;) {
      await sleep(delay(), signal);
      try {
        return await open();
      } catch (error) {
        const transient = error instanceof ApiClientError && (error.code === NETWORK_ERROR || (error.status >= 502 && error.status <= 504));
        if (signal?.aborted || (error instanceof ApiClientError && !transient)) throw error;
      }
    }
  }
}

/** Waits `ms`, or rejects with the signal's reason once it is aborted. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', aborted);
      resolve();
    }, ms);
    const aborted = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', aborted, { once: true });
  });
}

/** An error answer's body, read loosely: a proxy in between may answer anything. */
interface ErrorBody {
  code?: unknown;
  error?: unknown;
  message?: unknown;
  data?: unknown;
  defined?: unknown;
}

async function toError(response: Response): Promise<ApiClientError> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const retryAfterSeconds = retryAfter(response.headers.get('retry-after'));
  const body = (await response.json().catch(() => undefined)) as ErrorBody | null | undefined;
  const message = typeof body?.message === 'string' ? body.message : response.statusText;
  if (body && typeof body.code === 'string') {
    return new ApiClientError({ code: body.code, status: response.status, message, data: body.data, defined: body.defined === true, requestId, retryAfterSeconds });
  }
  // Transport-level errors keep their lowercase identifier ('payload_too_large', 'internal_error'),
  // so they never pass for a procedure's own code; non-JSON answers become HTTP_<status>.
  const code = typeof body?.error === 'string' ? body.error : `HTTP_${response.status}`;
  return new ApiClientError({ code, status: response.status, message, requestId, retryAfterSeconds });
}

/** Retry-After as whole seconds: the service sends delta-seconds; an HTTP date is read too. */
function retryAfter(header: string | null): number | undefined {
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** What outlives one connection: the last event id (sent back as Last-Event-Id) and the server's `retry:`. */
interface ReadState {
  lastEventId: string | undefined;
  retryMs: number;
}

/** Server-sent events per the WHATWG HTML "event stream interpretation" rules. */
async function* readEvents(response: Response, state: ReadState): AsyncGenerator<{ event: string; id: string | undefined; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id = state.lastEventId;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        // The id takes effect at the end of the block, even one without data.
        state.lastEventId = id;
        if (data.length > 0) yield { event: event || 'message', id, data: data.join('\n') };
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id' && !value.includes('\0')) id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) state.retryMs = Number(value);
    }
  }
}

function parseData(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Stream payloads are plain JSON; the contract names their date-time fields, which become Dates. */
function reviveDates(data: unknown, paths: readonly (readonly string[])[]): unknown {
  const revive = (value: unknown, path: readonly string[]): unknown => {
    if (path.length === 0) {
      if (typeof value !== 'string') return value;
      const date = new Date(value);
      return Number.isNaN(date.getTime()) ? value : date;
    }
    const [key, ...rest] = path as [string, ...string[]];
    if (Array.isArray(value)) return key === '*' ? value.map((item) => revive(item, rest)) : value;
    if (value === null || typeof value !== 'object') return value;
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    for (const name of key === '*' ? Object.keys(out) : Object.hasOwn(out, key) ? [key] : []) out[name] = revive(out[name], rest);
    return out;
  };
  return paths.reduce<unknown>((value, path) => revive(value, path), data);
}

/**
 * What the generated client (generated/client.ts) runs on: one POST per call to
 * `/rpc/<procedure with dots as slashes>`, the `{ json, meta }` body both ways, one error class,
 * and server-sent events as an async iterator for streaming procedures.
 */
import { decode, encode } from './wire.ts';

export interface ClientOptions {
  /** The service's origin, e.g. `http://127.0.0.1:3000` (the client appends `/rpc/...`). */
  baseUrl: string;
  /** A session token, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** A fetch implementation; the global one by default. */
  fetch?: typeof fetch;
  /** Extra headers for every call. */
  headers?: Record<string, string>;
}

/** Every failed call throws this, whatever the cause: the service's error body, or a transport failure. */
export class ApiClientError extends Error {
  override name = 'ApiClientError';
  readonly code: string;
  readonly status: number;
  readonly data: unknown;
  readonly defined: boolean;
  readonly requestId: string | undefined;

  constructor(init: { code: string; status: number; message: string; data?: unknown; defined?: boolean; requestId?: string }) {
    super(init.message);
    this.code = init.code;
    this.status = init.status;
    this.data = init.data;
    this.defined = init.defined ?? false;
    this.requestId = init.requestId;
  }
}

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
export type StreamEventOf<Message> = Message extends { event: infer E extends string; data: infer D }
  ? E extends 'error' ? never : { event: E; id: string | undefined; data: D }
  : never;

/**
 * Per event name the contract declares, the paths of its data's `format: date-time` fields (`*`:
 * any array element or map value), which the client turns into Dates. Events not listed are not
 * declared by the contract and are skipped.
 */
export type StreamDates = Readonly<Record<string, readonly (readonly string[])[]>>;

export function createCaller(options: ClientOptions) {
  const doFetch = options.fetch ?? globalThis.fetch;
  const base = options.baseUrl.replace(/\/+$/, '');

  async function post(procedure: string, input: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
    const response = await doFetch(`${base}/rpc/${procedure.replace(/\./g, '/')}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...options.headers,
        ...headers,
      },
      body: JSON.stringify(encode(input ?? {})),
      signal: signal ?? null,
    });
    if (!response.ok) throw await toError(response);
    return response;
  }

  return {
    async call(procedure: string, input: unknown): Promise<any> {
      const response = await post(procedure, input);
      return decode(await response.json());
    },
    async *stream<Event = StreamEvent>(procedure: string, input: unknown, dates: StreamDates, opts: { lastEventId?: string; signal?: AbortSignal } = {}): AsyncGenerator<Event> {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (opts.lastEventId) headers['last-event-id'] = opts.lastEventId;
      const response = await post(procedure, input, headers, opts.signal);
      for await (const message of readEvents(response)) {
        const data = parseData(message.data);
        if (message.event === 'error' && data && typeof data === 'object') {
          throw new ApiClientError(data as ConstructorParameters<typeof ApiClientError>[0]);
        }
        const paths = Object.hasOwn(dates, message.event) ? dates[message.event] : undefined;
        if (!paths) continue;
        yield { event: message.event, id: message.id, data: reviveDates(data, paths) } as Event;
      }
    },
  };
}

async function toError(response: Response): Promise<ApiClientError> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const body: any = await response.json().catch(() => undefined);
  if (body && typeof body.code === 'string') {
    return new ApiClientError({ ...body, status: response.status, requestId });
  }
  // Transport-level errors keep their lowercase identifier ('payload_too_large', 'internal_error'),
  // so they never pass for a procedure's own code; non-JSON answers become HTTP_<status>.
  const code = typeof body?.error === 'string' ? body.error : `HTTP_${response.status}`;
  return new ApiClientError({ code, status: response.status, message: body?.message ?? response.statusText, requestId });
}

/** Server-sent events per the WHATWG HTML "event stream interpretation" rules. */
async function* readEvents(response: Response): AsyncGenerator<{ event: string; id: string | undefined; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
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
      else if (field === 'id') id = value;
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

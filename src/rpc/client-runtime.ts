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
    async *stream(procedure: string, input: unknown, dateFields: readonly string[], opts: { lastEventId?: string; signal?: AbortSignal } = {}): AsyncGenerator<StreamEvent> {
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (opts.lastEventId) headers['last-event-id'] = opts.lastEventId;
      const response = await post(procedure, input, headers, opts.signal);
      for await (const message of readEvents(response)) {
        const data = parseData(message.data);
        if (message.event === 'error' && data && typeof data === 'object') {
          throw new ApiClientError(data as ConstructorParameters<typeof ApiClientError>[0]);
        }
        yield { event: message.event, id: message.id, data: reviveFields(data, dateFields) };
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
function reviveFields(data: unknown, fields: readonly string[]): unknown {
  if (data === null || typeof data !== 'object') return data;
  const out: Record<string, unknown> = { ...(data as Record<string, unknown>) };
  for (const field of fields) {
    const value = out[field];
    if (typeof value === 'string') out[field] = new Date(value);
  }
  return out;
}

/**
 * The API side's client of the companion AI service (server.ts), used by the job worker and
 * documents.search. Embeddings go through OpenAI's protocol, so AI_URL may also point at an
 * OpenAI-compatible provider (give `apiKey` and `model` then); extraction and health exist only on
 * the companion.
 *
 * Every failure is an AiServiceError whose `message` can be shown to a user and whose `detail`
 * (status, the service's own words, the network error) is for the log. An abort through the
 * caller's own `signal` is not a service failure: it rejects with the signal's reason.
 *
 * Each call is a CLIENT span (`ai.embed`, `ai.extract`, `ai.health`) whose W3C trace context goes
 * with the request (`traceparent`, `tracestate`), so the companion's spans are its children
 * (issue 41). Its attributes say how much and for whom (the number of texts, the purpose, the
 * content type, the payer), never the texts or the document's bytes.
 */
import { context, propagation } from '@opentelemetry/api';
import { inSpan, setAttributes, SpanKind, tracingOn, type Attributes, type Span } from '../telemetry/tracing.ts';
import { EMBEDDING_DIMENSIONS, isRecord, parseEmbeddings, type ExtractResult, type HealthReport, type TextHeading } from './protocol.ts';

export { EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL } from './protocol.ts';
export type { ExtractResult, HealthReport, TextHeading } from './protocol.ts';

export interface AiClientOptions {
  /** AI_URL, e.g. http://127.0.0.1:3001 or https://api.openai.com; a trailing slash is ignored. */
  url: string;
  /** AI_API_KEY: sent as a bearer token when set. */
  apiKey?: string | undefined;
  /** Sent as `model` with embeddings: hosted providers require it; the companion ignores it. */
  model?: string | undefined;
  fetch?: typeof fetch;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Defaults: embed 60 s, extract 120 s (OCR, large PDFs), health 5 s. */
  timeoutMs?: number;
  /** Whose work this is, sent as X-Organization-Id (the companion's logs name it). */
  organizationId?: string | undefined;
  /**
   * Who pays for it (organizations/payer.ts), sent as X-Payer-Id: the companion's queues take
   * turns by it (docs/ai-service.md "Queues"), so one payer's backlog does not hold another's, and
   * many free organizations of one owner take one turn. Without it, turns go by organization.
   */
  payer?: string | undefined;
  /**
   * embed: what the texts are for, sent as X-Embedding-Purpose. The companion embeds a search's
   * query apart from documents' chunks (docs/ai-service.md "Queues"), however few the texts; other
   * providers ignore it. Without it, the companion goes by the number of texts.
   */
  purpose?: 'query' | 'document' | undefined;
}

export interface AiClient {
  /** One vector of EMBEDDING_DIMENSIONS numbers per text, in order; 1 to 2048 texts of 1 to 8000 characters. */
  embed(texts: string[], options?: CallOptions): Promise<{ vectors: number[][]; model: string }>;
  /**
   * The document's text; `contentType` is one of DOCUMENT_CONTENT_TYPES, parameters allowed. The
   * bytes may come as a stream (a stored object read as it is sent: the job worker holds no copy
   * of a large document on its event loop); the caller closes it.
   */
  extract(bytes: Uint8Array | AsyncIterable<Uint8Array>, contentType: string, options?: CallOptions): Promise<ExtractResult>;
  health(options?: CallOptions): Promise<HealthReport & { latencyMs: number }>;
}

/**
 * The client for one job run: `signal` joined to every call's own, so the run's calls end when its
 * delivery is abandoned (the worker stops, the lease is lost) and the companion drops work whose
 * caller went away, instead of extracting and embedding for a run that a redelivery will do again;
 * and the job's payer on every call, so its turns in the companion's queues are the payer's.
 */
export function forRun(client: AiClient, run: { signal: AbortSignal; payer: string | undefined }): AiClient {
  const joined = (options: CallOptions | undefined): CallOptions => ({
    ...options,
    ...(run.payer ? { payer: run.payer } : {}),
    signal: options?.signal ? AbortSignal.any([options.signal, run.signal]) : run.signal,
  });
  return {
    embed: (texts, options) => client.embed(texts, joined(options)),
    extract: (bytes, contentType, options) => client.extract(bytes, contentType, joined(options)),
    health: (options) => client.health(joined(options)),
  };
}

const UNAVAILABLE = 'The AI service is unavailable, try again later.';

export class AiServiceError extends Error {
  override name = 'AiServiceError';
  /** True for network errors, timeouts, 5xx, 408, 429 and malformed answers: the same call may work later. */
  readonly retryable: boolean;
  /** The HTTP status, or null when no answer came. */
  readonly status: number | null;
  /** What went wrong, for the log only. */
  readonly detail: string;
  /** The Retry-After of a 503 or 429 in seconds (a full queue says when to come back), or null. */
  readonly retryAfterSeconds: number | null;

  constructor(message: string, options: { retryable: boolean; status: number | null; detail: string; retryAfterSeconds?: number | null; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.retryable = options.retryable;
    this.status = options.status;
    this.detail = options.detail;
    this.retryAfterSeconds = options.retryAfterSeconds ?? null;
  }
}

/** User-facing messages for the answers a caller cannot fix by retrying. */
const REFUSALS: Record<number, string> = {
  413: 'The document is too large to read.',
  415: "The document's type cannot be read.",
  422: "The document's text could not be read.",
};

/** One call to the service; `timeoutMs` is its default, CallOptions.timeoutMs overrides it. */
interface Exchange {
  /** Its span's name. */
  span: 'ai.embed' | 'ai.extract' | 'ai.health';
  /** Its span's own attributes (what and how much, never the content). */
  attributes?: Attributes;
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array<ArrayBuffer> | AsyncIterable<Uint8Array>;
  timeoutMs: number;
  /**
   * The companion's 422 refusals of a document are written for its owner ("The PDF has 5 000
   * pages; at most 2 000 can be read."), so extraction passes them on as the message.
   */
  passRefusals?: boolean;
}

const JSON_CONTENT = { 'content-type': 'application/json' };

export function createAiClient(options: AiClientOptions): AiClient {
  const base = options.url.replace(/\/+$/, '');
  const fetchImpl = options.fetch ?? fetch;
  const authorization: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};

  const serverAddress = URL.canParse(base) ? new URL(base).hostname : undefined;

  function call<T>(request: Exchange, callOptions: CallOptions, read: (body: unknown) => T): Promise<T> {
    return inSpan(request.span, { kind: SpanKind.CLIENT }, async (span) => {
      setAttributes(span, () => ({
        'http.request.method': request.method,
        'url.path': request.path,
        ...(serverAddress ? { 'server.address': serverAddress } : {}),
        ...(callOptions.organizationId ? { 'organization.id': callOptions.organizationId } : {}),
        ...(callOptions.payer ? { 'ai.payer': callOptions.payer } : {}),
        ...request.attributes,
      }));
      return exchange(request, callOptions, read, span);
    });
  }

  async function exchange<T>(request: Exchange, callOptions: CallOptions, read: (body: unknown) => T, span: Span): Promise<T> {
    const timeoutMs = callOptions.timeoutMs ?? request.timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = callOptions.signal ? AbortSignal.any([callOptions.signal, timeout]) : timeout;
    const where = `${request.method} ${base}${request.path}`;
    let status: number | null = null;
    try {
      const response = await fetchImpl(`${base}${request.path}`, {
        method: request.method,
        headers: {
          ...authorization,
          ...request.headers,
          ...(callOptions.organizationId ? { 'x-organization-id': callOptions.organizationId } : {}),
          ...(callOptions.payer ? { 'x-payer-id': callOptions.payer } : {}),
          ...(callOptions.purpose ? { 'x-embedding-purpose': callOptions.purpose } : {}),
          ...traceHeaders(),
        },
        body: request.body ?? null,
        // A streamed body goes out as it is read (chunked); fetch requires `duplex: 'half'` for it.
        ...(request.body !== undefined && typeof request.body !== 'string' && !(request.body instanceof Uint8Array) ? { duplex: 'half' } : {}),
        signal,
      });
      status = response.status;
      setAttributes(span, () => ({ 'http.response.status_code': response.status }));
      const text = await response.text();
      const body = parseJson(text);
      if (!response.ok) {
        const said = isRecord(body) && isRecord(body.error) && typeof body.error.message === 'string' ? body.error.message : text.slice(0, 300);
        const detail = `${where} answered ${status}: ${said}`;
        const retryable = status >= 500 || status === 408 || status === 429;
        const refusal = REFUSALS[status];
        const message = retryable ? UNAVAILABLE : status === 422 && request.passRefusals && said ? said : (refusal ?? 'The AI service refused the request.');
        const retryAfterSeconds = status === 503 || status === 429 ? parseRetryAfter(response.headers.get('retry-after')) : null;
        throw new AiServiceError(message, { retryable, status, detail, retryAfterSeconds });
      }
      try {
        return read(body);
      } catch (error) {
        throw new AiServiceError(UNAVAILABLE, { retryable: true, status, detail: `${where} answered ${status} with an unexpected body: ${(error as Error).message}`, cause: error });
      }
    } catch (error) {
      if (error instanceof AiServiceError) throw error;
      if (callOptions.signal?.aborted) throw callOptions.signal.reason;
      const detail = timeout.aborted ? `${where}: no answer within ${timeoutMs} ms` : `${where}: ${describe(error)}`;
      throw new AiServiceError(UNAVAILABLE, { retryable: true, status, detail, cause: error });
    }
  }

  return {
    embed(texts, callOptions = {}) {
      const body = JSON.stringify({ input: texts, model: options.model, dimensions: EMBEDDING_DIMENSIONS, encoding_format: 'float' });
      const attributes = { 'ai.texts': texts.length, ...(callOptions.purpose ? { 'ai.purpose': callOptions.purpose } : {}) };
      const request = { span: 'ai.embed', attributes, method: 'POST', path: '/v1/embeddings', headers: JSON_CONTENT, body, timeoutMs: 60_000 } as const;
      return call(request, callOptions, (answer) => {
        const { vectors, model } = parseEmbeddings(answer, texts.length);
        if (!model) throw new Error('the answer names no model');
        return { vectors, model };
      });
    },

    extract(bytes, contentType, callOptions = {}) {
      const body = bytes as Uint8Array<ArrayBuffer> | AsyncIterable<Uint8Array>;
      const attributes = { 'ai.content_type': contentType.slice(0, 100) };
      const request = { span: 'ai.extract', attributes, method: 'POST', path: '/v1/extract', headers: { 'content-type': contentType }, body, timeoutMs: 120_000, passRefusals: true } as const;
      return call(request, callOptions, (answer) => {
        if (!isRecord(answer) || typeof answer.text !== 'string') throw new Error('no text');
        const pages = answer.pages;
        if (pages !== null && !(Number.isInteger(pages) && (pages as number) >= 0)) throw new Error('pages is neither null nor a count');
        return { text: answer.text, pages: pages as number | null, ...citationsOf(answer, answer.text.length), language: languageOf(answer.language) };
      });
    },

    async health(callOptions = {}) {
      const started = performance.now();
      const report = await call({ span: 'ai.health', method: 'GET', path: '/health', timeoutMs: 5_000 }, callOptions, readHealth);
      return { ...report, latencyMs: Math.round(performance.now() - started) };
    },
  };
}

/** The active span's W3C trace context as request headers (traceparent, tracestate); none while tracing is off. */
function traceHeaders(): Record<string, string> {
  if (!tracingOn()) return {};
  const headers: Record<string, string> = {};
  propagation.inject(context.active(), headers);
  return headers;
}

/**
 * The optional places in an extraction's text (pageStarts, headings), kept only when well formed:
 * they serve citations, so a service that sends none or odd ones costs a chunk its page, never the
 * extraction.
 */
function citationsOf(answer: Record<string, unknown>, length: number): Pick<ExtractResult, 'pageStarts' | 'headings'> {
  const offset = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0 && (value as number) <= length;
  const { pageStarts, headings } = answer;
  const result: Pick<ExtractResult, 'pageStarts' | 'headings'> = {};
  if (Array.isArray(pageStarts) && pageStarts.every(offset) && pageStarts.every((start, i) => i === 0 || start >= (pageStarts[i - 1] as number))) {
    result.pageStarts = pageStarts;
  }
  if (
    Array.isArray(headings) &&
    headings.every(
      (heading) => isRecord(heading) && offset(heading.start) && Number.isInteger(heading.level) && (heading.level as number) >= 1 && (heading.level as number) <= 6 && typeof heading.text === 'string',
    )
  ) {
    result.headings = (headings as TextHeading[]).map(({ start, level, text }) => ({ start, level, text }));
  }
  return result;
}

/** The answer's language when it is an ISO 639-3 code, else `und`: an older service sends none, and a language only tunes search. */
function languageOf(language: unknown): string {
  return typeof language === 'string' && /^[a-z]{3}$/.test(language) ? language : 'und';
}

function readHealth(answer: unknown): HealthReport {
  if (
    !isRecord(answer) ||
    typeof answer.ok !== 'boolean' ||
    typeof answer.version !== 'string' ||
    (answer.provider !== 'local' && answer.provider !== 'openai') ||
    (answer.ocr !== null && typeof answer.ocr !== 'string') ||
    (answer.model !== undefined && answer.model !== null && typeof answer.model !== 'string') ||
    !Array.isArray(answer.problems) ||
    !answer.problems.every((problem) => typeof problem === 'string')
  ) {
    throw new Error('not a health report');
  }
  return {
    ok: answer.ok,
    version: answer.version,
    provider: answer.provider,
    model: answer.model ?? null,
    ocr: answer.ocr,
    problems: answer.problems,
  };
}

/** Retry-After as seconds (RFC 9110 §10.2.3: a number of seconds or an HTTP date), or null. */
function parseRetryAfter(value: string | null): number | null {
  if (value === null) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** fetch reports "fetch failed" and keeps the reason (ECONNREFUSED, ...) in `cause`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: string; message?: string } | undefined;
  return cause ? `${error.message} (${cause.code ?? cause.message})` : error.message;
}

/**
 * The AI service's spans (issue 41; docs/ai-service.md "Traces"): a SERVER span per request, child
 * of the caller's span (W3C traceparent), and under it the request's wait in a fair queue, its
 * extraction thread, its OCR run and the embedding batches its texts went through.
 *
 * Every function here costs a `tracingOn()` check and nothing else while tracing is off: no span,
 * no attributes built, no context captured. Attributes hold counts, sizes, types and the turn's
 * key, never a text, a document's text or a header's secret.
 */
import type { IncomingMessage } from 'node:http';
import { context, INVALID_SPAN_CONTEXT, propagation, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import { failed, SpanKind, tracer, tracingOn, type Link, type Span } from '../telemetry/tracing.ts';
import { CALLER_GONE, HttpError } from './http-exchange.ts';

/** What the functions below hand on while tracing is off: a span that records nothing. */
const NO_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

const isCallerGone = (error: unknown) => error instanceof HttpError && error.status === CALLER_GONE;

/** Marks `span` as ended by its caller's leaving: an event and an attribute, not an error. */
export function callerWentAway(span: Span): void {
  if (!span.isRecording()) return;
  span.setAttribute('ai.caller_gone', true);
  span.addEvent('caller went away');
}

/**
 * Runs `handle` in the SERVER span of `request`, named by its route (`POST /v1/extract`), or by
 * its method alone when no route matches (never the raw path). A `trusted` caller's traceparent
 * makes the span its child; an untrusted one (a wrong or missing key while AI_API_KEY is set)
 * starts a new trace.
 */
export function inRequestSpan(request: IncomingMessage, route: string | undefined, trusted: () => boolean, handle: (span: Span) => Promise<void>): Promise<void> {
  if (!tracingOn()) return handle(NO_SPAN);
  const method = request.method ?? 'GET';
  const parent = trusted() ? propagation.extract(context.active(), request.headers) : context.active();
  const span = tracer.startSpan(route ? `${method} ${route}` : method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, ...(route ? { 'http.route': route } : {}) } }, parent);
  return context.with(trace.setSpan(parent, span), () => handle(span)).finally(() => span.end());
}

/** The turn's keys (already validated by turnOf) and the embedding purpose, on the request's span. */
export function describeCall(span: Span, request: IncomingMessage, purpose: string | undefined): void {
  if (!span.isRecording()) return;
  const payer = request.headers['x-payer-id'];
  const organization = request.headers['x-organization-id'];
  if (typeof payer === 'string') span.setAttribute('payer.id', payer);
  if (typeof organization === 'string') span.setAttribute('organization.id', organization);
  if (purpose) span.setAttribute('ai.embedding.purpose', purpose);
}

/** The answer's status; a 5xx marks the span as failed with the message the caller saw. */
export function answered(span: Span, error: HttpError | null): void {
  if (!span.isRecording()) return;
  const status = error?.status ?? 200;
  span.setAttribute('http.response.status_code', status);
  if (error && status >= 500) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    span.setAttribute('error.type', String(status));
  }
}

/**
 * Runs `fn` in an internal span `name` (a child of the active one). A throw marks it failed,
 * except the caller's leaving, which only marks it as such.
 */
export function inAiSpan<T>(name: string, fn: (span: Span) => Promise<T>): Promise<T> {
  if (!tracingOn()) return fn(NO_SPAN);
  return tracer.startActiveSpan(name, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      if (isCallerGone(error)) callerWentAway(span);
      else failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** How a wait in a fair queue ended. */
export type WaitOutcome = 'started' | 'refused' | 'dropped' | 'cancelled';

/**
 * `ai.queue.wait`: from a request's arrival at `queue` until its turn, a child of the active span
 * (or of `parent`). Every request gets one, zero-long when it starts at once, so a trace always
 * shows the queue step and a query over these spans sees the waits that were nil too. Undefined
 * while tracing is off.
 */
export function startQueueWait(queue: string, waiting: number, running: number, parent?: Context): Span | undefined {
  if (!tracingOn()) return undefined;
  return tracer.startSpan('ai.queue.wait', { attributes: { 'ai.queue': queue, 'ai.queue.waiting': waiting, 'ai.queue.running': running } }, parent ?? context.active());
}

export function endQueueWait(span: Span | undefined, outcome: WaitOutcome): void {
  if (!span) return;
  span.setAttribute('ai.queue.outcome', outcome);
  if (outcome === 'dropped') callerWentAway(span);
  span.end();
}

/** One request's texts in a batch, as batchSpans needs them. */
export interface TracedPart {
  /** The context the request was made in (its request span); undefined while tracing was off. */
  trace: Context | undefined;
  texts: number;
}

/**
 * One `ai.embed.batch` span per request in a batch, each a child of that request's span, with
 * links to the other requests' spans: a request's trace shows every batch its texts went
 * through, and the links say which requests shared it. `batch` numbers the batches, the same on
 * every span of one. Empty while tracing is off.
 */
export function startBatchSpans(thread: string, batch: number, parts: readonly TracedPart[]): Span[] {
  if (!tracingOn()) return [];
  const total = parts.reduce((sum, part) => sum + part.texts, 0);
  const contexts = parts.map((part) => (part.trace ? trace.getSpanContext(part.trace) : undefined));
  return parts.map((part, at) => {
    const links: Link[] = contexts.flatMap((other, index) => (other && index !== at ? [{ context: other }] : []));
    const attributes = { 'ai.embed.thread': thread, 'ai.embed.batch': batch, 'ai.embed.texts': part.texts, 'ai.embed.batch.texts': total, 'ai.embed.batch.requests': parts.length };
    return tracer.startSpan('ai.embed.batch', { attributes, links }, part.trace ?? context.active());
  });
}

/**
 * Ends a batch's spans: with each request's share of the model's tokens (embedding-batches.ts's
 * shareTokens) when it came back, else failed by `error`.
 */
export function endBatchSpans(spans: readonly Span[], outcome: { tokens: number; shares: () => number[] } | { error: string }): void {
  if (spans.length === 0) return;
  const shares = 'error' in outcome ? null : outcome.shares();
  spans.forEach((span, at) => {
    if ('error' in outcome) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
    else span.setAttributes({ 'ai.embed.batch.tokens': outcome.tokens, 'ai.embed.tokens': shares![at]! });
    span.end();
  });
}

/** The active context, kept with work that leaves it (a request waiting for a batch); undefined while tracing is off. */
export function currentTrace(): Context | undefined {
  return tracingOn() ? context.active() : undefined;
}

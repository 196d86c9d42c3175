/**
 * Spans of Stripe's API (issue 41, docs/observability.md): `stripe.<resource>.<method>` around each
 * call made through the service's client (`stripe.customers.create`,
 * `stripe.checkout.sessions.create`), with the answer's HTTP status and Stripe's request id (what
 * Stripe's support asks for), its retries included. Never the call's parameters (a customer's
 * name or email), the answer's body or the API key; a failure is named by Stripe's error type and
 * code, not its message (which can quote a parameter).
 *
 * The client is wrapped in proxies that name each call by the path it was reached by; each call
 * checks `tracingOn()` first and, while tracing is off, is the library's own. Only the resources'
 * methods are wrapped: `webhooks` (signature checks, local work) and the client's own functions
 * (`on`, ...) are not.
 */
import { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import type Stripe from 'stripe';
import { tracer, tracingOn } from '../telemetry/tracing.ts';

/** What a resource method's answer carries (the library's `lastResponse`), or a StripeError. */
interface Answered {
  lastResponse?: { statusCode?: unknown; requestId?: unknown };
}
interface Refused {
  type?: unknown;
  code?: unknown;
  statusCode?: unknown;
  requestId?: unknown;
}

/** The client's properties that are not API resources. */
const NOT_RESOURCES = new Set(['webhooks', 'errors', 'Decimal', 'stripe', 'StripeResource']);

/** `client` whose resource methods make spans while tracing is on. `resourceClass` is the library's Stripe.StripeResource. */
export function withStripeSpans(client: Stripe, resourceClass: abstract new (...args: never[]) => unknown): Stripe {
  return namespace(client, 'stripe', resourceClass);
}

/** The client or a namespace (`checkout`): its resources, and namespaces in it, named by their path. */
function namespace<T extends object>(target: T, path: string, resourceClass: abstract new (...args: never[]) => unknown): T {
  const made = new Map<string, unknown>();
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof property !== 'string' || property.startsWith('_') || NOT_RESOURCES.has(property) || value === null || typeof value !== 'object') return value;
      let wrapped = made.get(property);
      if (wrapped === undefined) {
        const name = `${path}.${property}`;
        wrapped = value instanceof resourceClass ? resource(value, name) : namespace(value, name, resourceClass);
        made.set(property, wrapped);
      }
      return wrapped;
    },
  });
}

/** A resource (`customers`): each method a span named `<path>.<method>`. */
function resource<T extends object>(target: T, path: string): T {
  const made = new Map<string, unknown>();
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (typeof property !== 'string' || property.startsWith('_') || property === 'constructor' || typeof value !== 'function') return value;
      let wrapped = made.get(property);
      if (wrapped === undefined) {
        const method = value as (...args: unknown[]) => unknown;
        const name = `${path}.${property}`;
        wrapped = (...args: unknown[]) => (tracingOn() ? traced(name, () => Reflect.apply(method, object, args)) : Reflect.apply(method, object, args));
        made.set(property, wrapped);
      }
      return wrapped;
    },
  });
}

/**
 * Runs one call in its span. The library's answer is handed back as it is (a list's answer has
 * autoPagingEach and the like on its promise); the span only watches it.
 */
function traced(name: string, call: () => unknown): unknown {
  const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes: { 'rpc.system.name': 'stripe' } });
  let answer: unknown;
  try {
    answer = call();
  } catch (error) {
    refused(span, error);
    span.end();
    throw error;
  }
  if (!isThenable(answer)) {
    span.end();
    return answer;
  }
  void answer.then(
    (value) => {
      const response = (value as Answered | null)?.lastResponse;
      if (typeof response?.statusCode === 'number') span.setAttribute('http.response.status_code', response.statusCode);
      if (typeof response?.requestId === 'string') span.setAttribute('app.stripe.request_id', response.requestId);
      span.end();
    },
    (error: unknown) => {
      refused(span, error);
      span.end();
    },
  );
  return answer;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** A StripeError: its status, request id, type and code (`StripeInvalidRequestError`, `resource_missing`). */
function refused(span: Span, error: unknown): void {
  const e = error as Refused | null;
  if (typeof e?.statusCode === 'number') span.setAttribute('http.response.status_code', e.statusCode);
  if (typeof e?.requestId === 'string') span.setAttribute('app.stripe.request_id', e.requestId);
  if (typeof e?.code === 'string') span.setAttribute('app.stripe.error_code', e.code);
  const type = typeof e?.type === 'string' ? e.type : error instanceof Error ? error.name : typeof error;
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/**
 * One SERVER span per request (issue 41; docs/observability.md), active while the request is
 * handled, so that what runs for it (the session lookup, the access check, the handler's
 * transactions, storage and AI calls, jobs.create) makes its spans under it. Named by the
 * procedure or identity route the transports resolved (`documents.search`,
 * `auth.organization.create`), never by the raw path, which holds ids and tokens; other routes by
 * their template (`GET /healthz`), anything unrouted `http.unmatched`. An event stream's span ends
 * with its response.
 *
 * A client's `traceparent` and `tracestate` (W3C Trace Context) are not trusted by default: the
 * request starts a new trace and keeps the client's span as a link. TRACE_TRUST_INCOMING continues
 * the client's trace. Every response names its span in `traceresponse` (W3C Trace Context Level 2,
 * draft). While tracing is off, this is one check per request: no span, no header.
 */
import { context, createContextKey, isSpanContextValid, propagation, trace, SpanStatusCode, type Context } from '@opentelemetry/api';
import type { Request, RequestHandler, Response } from 'express';
import { authRoutes } from '../../generated/auth-routes.ts';
import { procedures } from '../../generated/procedures.ts';
import { hasBody } from './json-body.ts';
import { incomingFields, NEW_TRACE, SpanKind, traceResponse, tracer, tracingOn, type Attributes, type Link, type Span } from '../telemetry/tracing.ts';

/** The name of a request's span when no route took it (a 404, or a refusal before routing). */
export const UNMATCHED = 'http.unmatched';

/** What the request's context holds of its span: the organization is noted there and set on the span when it ends. */
interface RequestRecord {
  organizationId?: string;
}
const REQUEST = createContextKey('workspace-api request');

export function requestSpans(options: { trustIncoming: boolean }): RequestHandler {
  return (req, res, next) => {
    if (!tracingOn()) {
      next();
      return;
    }
    // Most callers send no trace context: then nothing to extract (the propagators' parsing was a
    // measurable part of a span's cost, bench/tracing.ts).
    let parent: Context = NEW_TRACE;
    const links: Link[] = [];
    if (incomingFields.some((field) => req.headers[field] !== undefined)) {
      const incoming = propagation.extract(NEW_TRACE, req.headers);
      const remote = trace.getSpanContext(incoming);
      if (options.trustIncoming) parent = incoming;
      else if (remote && isSpanContextValid(remote)) links.push({ context: remote });
    }
    // Its attributes are set once the response has gone (finish): the SDK checks each attribute
    // it is given, work that need not delay the answer. No sampler the SDK can be configured with
    // (OTEL_TRACES_SAMPLER) decides on attributes.
    const span = tracer.startSpan(UNMATCHED, { kind: SpanKind.SERVER, links }, parent);
    res.setHeader('traceresponse', traceResponse(span));
    const record: RequestRecord = {};
    const active = trace.setSpan(parent, span).setValue(REQUEST, record);
    // A body's reader (json-body.ts, an upload's PUT) goes on from the request's `data` and `end`
    // events, which run in the context of the socket that emits them: bound, they run in the
    // request's. Only then: binding patches every listener method of the emitter, which was the
    // largest part of a span's cost on a request without a body (bench/tracing.ts). The response's
    // listeners do nothing that makes spans; the access log takes its ids when the request starts.
    if (hasBody(req)) context.bind(active, req);
    // 'close' comes once and last, after 'finish' for a response sent whole and alone for one cut short.
    res.on('close', () => finish(span, record, req, res));
    context.with(active, next);
  };
}

/**
 * The organization the access layer resolved for the request being handled (procedure-call.ts),
 * on its span. Does nothing outside a traced request.
 */
export function noteOrganization(organizationId: string | undefined): void {
  if (organizationId === undefined || !tracingOn()) return;
  const record = context.active().getValue(REQUEST) as RequestRecord | undefined;
  if (record) record.organizationId = organizationId;
}

/** Names the span after what answered, and records the request's method, id and organization and the answer's status. */
function finish(span: Span, record: RequestRecord, req: Request, res: Response): void {
  const { name, route } = routeOf(req, res);
  span.updateName(name);
  const status = res.statusCode;
  const attributes: Attributes = { 'http.request.method': req.method, 'app.request.id': req.id, 'http.response.status_code': status };
  if (route !== undefined) attributes['http.route'] = route;
  if (record.organizationId !== undefined) attributes['app.organization.id'] = record.organizationId;
  // Server spans: a 4xx is the client's doing, not a failure of the service (OpenTelemetry's HTTP conventions).
  if (status >= 500) {
    attributes['error.type'] = String(status);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.setAttributes(attributes);
  span.end();
}

const RPC = '/rpc';

/** The procedure or identity route the transports named (`res.locals.procedure`), and its template path. */
function routeOf(req: Request, res: Response): { name: string; route?: string } {
  const procedure: unknown = res.locals.procedure;
  if (typeof procedure === 'string') {
    if (req.originalUrl.startsWith(`${RPC}/`)) return { name: procedure, route: `${RPC}/${procedure.replace(/\./g, '/')}` };
    const rest = (procedures as Record<string, { path: string } | undefined>)[procedure];
    if (rest) return { name: procedure, route: `/api/v1${rest.path}` };
    const identity = (authRoutes as Record<string, { path: string } | undefined>)[procedure];
    return identity ? { name: procedure, route: `/api/auth${identity.path}` } : { name: procedure };
  }
  // Express's own routes (/healthz, an upload address) by their template, which holds no token.
  const template = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof template === 'string') {
    const route = `${req.baseUrl}${template}`;
    return { name: `${req.method} ${route}`, route };
  }
  return { name: UNMATCHED };
}

/**
 * A job's place in the traces (issue 41; docs/observability.md). A job outlives the request that
 * created it, so its run is not a child of that request: each delivery runs in a span of a new
 * trace (`job.run <kind>`) that links to
 *
 * - the span that created the job (the request's), whose W3C trace context (traceparent,
 *   tracestate) travels in pg-boss's job data (queue.ts QueuedJob.trace), which pg-boss keeps
 *   across retries and our queue forwards to a workspace.index job's next slices; and
 * - the job's first run, whose context the first start stores on the job's row
 *   (jobs.first_run_trace, 0021), so every retry and every later slice links to it.
 *
 * While tracing is off nothing is injected, stored or linked: the job data and the statements are
 * those of a release without tracing.
 */
import { context, isSpanContextValid, propagation, trace, type SpanContext } from '@opentelemetry/api';
import { NEW_TRACE, tracingOn, type Link } from '../telemetry/tracing.ts';
import type { TraceCarrier } from './store.ts';

export type { TraceCarrier } from './store.ts';

/** The active span's context as a carrier, or undefined while tracing is off or no span is active. */
export function activeTrace(): TraceCarrier | undefined {
  if (!tracingOn()) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrierOf(carrier) ?? undefined;
}

/**
 * A carrier read from stored data (pg-boss's job data, the jobs row): null unless it has the
 * shape this module writes. What it holds is checked again when it is read into a span context.
 */
export function carrierOf(value: unknown): TraceCarrier | null {
  if (typeof value !== 'object' || value === null) return null;
  const { traceparent, tracestate } = value as Record<string, unknown>;
  if (typeof traceparent !== 'string' || traceparent.length > 256) return null;
  return typeof tracestate === 'string' && tracestate.length <= 512 ? { traceparent, tracestate } : { traceparent };
}

/** The span context a carrier names, or null when it names none that is valid. */
export function spanContextOf(carrier: TraceCarrier | null | undefined): SpanContext | null {
  if (!carrier) return null;
  const found = trace.getSpanContext(propagation.extract(NEW_TRACE, carrier));
  return found && isSpanContextValid(found) ? found : null;
}

/** Why a run links to another span: `job.link` on the link. */
export type LinkReason = 'created_by' | 'first_run';

/** A link of `reason` to the span a carrier names; none when it names none. */
export function linksTo(carrier: TraceCarrier | null | undefined, reason: LinkReason): Link[] {
  const linked = spanContextOf(carrier);
  return linked ? [{ context: linked, attributes: { 'job.link': reason } }] : [];
}

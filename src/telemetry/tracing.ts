/**
 * OpenTelemetry traces (issue 41; docs/observability.md). Off by default and free when off: the
 * code everywhere speaks only `@opentelemetry/api`, whose tracer does nothing until an SDK is
 * registered, and `startTracing` loads the Node SDK (`@opentelemetry/sdk-node`, configured by the
 * standard `OTEL_*` variables) only when an exporter is configured. Until then `inSpan` does not
 * even make a span: it calls its function with a span that records nothing.
 *
 * No automatic instrumentation (no patched modules): the spans are the project's own, at the
 * places that know what a thing is called (the procedure, not the raw path; the transaction, not
 * the SQL text), so what reaches an exporter never holds a token, a password, a signed URL or a
 * document's text.
 */
import { context, INVALID_SPAN_CONTEXT, propagation, ROOT_CONTEXT, SpanStatusCode, trace, type Attributes, type Context, type Span, type SpanOptions } from '@opentelemetry/api';
import { spanIds } from './span-ids.ts';

export { SpanKind } from '@opentelemetry/api';
export type { Attributes, Link, Span } from '@opentelemetry/api';

/**
 * The tracer of every span the service makes; a no-op until startTracing registers the SDK. A live
 * binding, taken again at each start: a tracer taken before a shutdown stays tied to the SDK that
 * was shut down (test files share worker processes, each starting tracing anew).
 */
export let tracer = trace.getTracer('workspace-api');

let tracing = false;

/**
 * The request headers the configured propagators read (OTEL_PROPAGATORS: W3C's traceparent,
 * tracestate and baggage by default), taken once at the start: a request carrying none of them
 * has no context to extract.
 */
export let incomingFields: readonly string[] = [];

/** Whether an SDK was started in this process: spans are recorded and exported. */
export function tracingOn(): boolean {
  return tracing;
}

/**
 * Whether the environment configures a trace exporter: the standard variables, as the Node SDK
 * reads them (OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER, an OTLP endpoint).
 */
function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  // As the SDK reads a boolean: trimmed, any case.
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  if (exporters.includes('none')) return false;
  if (exporters.length > 0) return true;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export interface Tracing {
  /** Exports what the batch processor holds now (tests, and a process about to wait). */
  flush(): Promise<void>;
  /**
   * Exports what is still buffered, then stops, and unregisters the SDK from the API (tracer,
   * context manager, propagator): the process is as if tracing had never started.
   */
  shutdown(): Promise<void>;
}

/**
 * Starts the Node SDK when the environment configures an exporter, else does nothing (null).
 * `serviceName` is the process's role (workspace-api, workspace-api-worker, workspace-api-ai)
 * unless OTEL_SERVICE_NAME names one. Metrics and logs stay with Prometheus and pino unless their
 * own OTEL_*_EXPORTER asks otherwise. The SDK reads the OTEL_* variables of `process.env` itself
 * (`env` only decides whether to start it), including OTEL_TRACES_SAMPLER and OTEL_BSP_*.
 */
export async function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  if (!tracingConfigured(env)) return null;
  if (tracing) throw new Error('tracing is already started in this process');
  env.OTEL_METRICS_EXPORTER ??= 'none';
  env.OTEL_LOGS_EXPORTER ??= 'none';
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const sdk = new NodeSDK({ serviceName: env.OTEL_SERVICE_NAME || serviceName, instrumentations: [], idGenerator: spanIds });
  sdk.start();
  tracer = trace.getTracer('workspace-api');
  incomingFields = propagation.fields();
  tracing = true;
  return {
    async flush() {
      // The API's global provider is a proxy; the SDK's provider behind it buffers the spans.
      const provider = trace.getTracerProvider() as { getDelegate?(): { forceFlush?(): Promise<void> } };
      await provider.getDelegate?.().forceFlush?.();
    },
    async shutdown() {
      tracing = false;
      incomingFields = [];
      try {
        await sdk.shutdown();
      } finally {
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
}

/**
 * The OTEL_* variables a child process of `serve` (the job worker, the AI service) gets, so that
 * it starts an SDK of its own exporting where its parent does. Each process is its own service:
 * when OTEL_SERVICE_NAME names the parent, the child is that name with its role appended
 * (`acme-api-worker`); otherwise the child takes its default role name.
 */
export function childTracingEnvironment(parent: NodeJS.ProcessEnv, role: 'worker' | 'ai'): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) if (name.startsWith('OTEL_') && value !== undefined) env[name] = value;
  if (parent.OTEL_SERVICE_NAME) env.OTEL_SERVICE_NAME = `${parent.OTEL_SERVICE_NAME}-${role}`;
  return env;
}

/**
 * The `traceresponse` header's value for `span` (W3C Trace Context Level 2, draft): version 00,
 * the trace id, the span id and the trace flags, as in `traceparent`.
 */
export function traceResponse(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`;
}

/** The ids a log line written inside `span` carries (pino's mixin, src/logger.ts); none while tracing is off. */
export function logIds(): { trace_id: string; span_id: string } | undefined {
  if (!tracing) return undefined;
  const span = trace.getActiveSpan();
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return traceId === INVALID_SPAN_CONTEXT.traceId ? undefined : { trace_id: traceId, span_id: spanId };
}

/** A span that records nothing: what `inSpan` hands its function while tracing is off. */
const NOT_RECORDING = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Runs `fn` in a new active span named `name`, ending it when `fn` settles; a throw marks the span
 * as an error (failed). While tracing is off, `fn` runs as it is.
 */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>, parent?: Context): Promise<T> {
  if (!tracing) return fn(NOT_RECORDING);
  return tracer.startActiveSpan(name, options, parent ?? context.active(), async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * Marks `span` as failed by `error`: its type and its code (a SQLSTATE, a Node error code, the
 * contract's error code), never its message, which may quote what it failed on (PostgreSQL's
 * quote a statement's parameter; a parser's, the document).
 */
export function failed(span: Span, error: unknown): void {
  const type = error instanceof Error ? error.name : typeof error;
  const code = (error as { code?: unknown } | null)?.code;
  const described = typeof code === 'string' || typeof code === 'number' ? `${type} ${code}` : type;
  span.setStatus({ code: SpanStatusCode.ERROR, message: described });
  span.setAttribute('error.type', described);
}

/** The context with no span in it: a new trace starts there (a job's run, an untrusted caller). */
export const NEW_TRACE: Context = ROOT_CONTEXT;

/** Attributes set only while tracing is on (building them costs nothing otherwise). */
export function setAttributes(span: Span, attributes: () => Attributes): void {
  if (tracing && span.isRecording()) span.setAttributes(attributes());
}

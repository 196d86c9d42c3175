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
import { context, INVALID_SPAN_CONTEXT, ROOT_CONTEXT, SpanStatusCode, trace, type Attributes, type Context, type Link, type Span, type SpanOptions } from '@opentelemetry/api';

export { SpanKind } from '@opentelemetry/api';
export type { Attributes, Link, Span } from '@opentelemetry/api';

/** The tracer of every span the service makes; a no-op until startTracing registers the SDK. */
export const tracer = trace.getTracer('workspace-api');

let tracing = false;

/** Whether an SDK was started in this process: spans are recorded and exported. */
export function tracingOn(): boolean {
  return tracing;
}

/**
 * Whether the environment configures a trace exporter: the standard variables, as the Node SDK
 * reads them (OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER, an OTLP endpoint).
 */
export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  if (exporters.includes('none')) return false;
  if (exporters.length > 0) return true;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

export interface Tracing {
  /** Exports what is still buffered, then stops. */
  shutdown(): Promise<void>;
}

/**
 * Starts the Node SDK when the environment configures an exporter, else does nothing (null).
 * `serviceName` is the process's role (workspace-api, workspace-api-worker, workspace-api-ai)
 * unless OTEL_SERVICE_NAME names one. Metrics and logs stay with Prometheus and pino unless their
 * own OTEL_*_EXPORTER asks otherwise.
 */
export async function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  if (!tracingConfigured(env)) return null;
  env.OTEL_METRICS_EXPORTER ??= 'none';
  env.OTEL_LOGS_EXPORTER ??= 'none';
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const sdk = new NodeSDK({ serviceName: env.OTEL_SERVICE_NAME || serviceName, instrumentations: [] });
  sdk.start();
  tracing = true;
  return {
    async shutdown() {
      tracing = false;
      await sdk.shutdown();
    },
  };
}

/** A span that records nothing: what `inSpan` hands its function while tracing is off. */
const NOT_RECORDING = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Runs `fn` in a new active span named `name`, ending it when `fn` settles; a throw marks the span
 * as an error (its exception's type and message only). While tracing is off, `fn` runs as it is.
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

/** Marks `span` as failed by `error`: its type and message, never its stack's data. */
export function failed(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  span.setAttribute('error.type', error instanceof Error ? error.name : typeof error);
}

/** The context with no span in it: a new trace starts there (a job's run, an untrusted caller). */
export const NEW_TRACE: Context = ROOT_CONTEXT;

/** Attributes set only while tracing is on (building them costs nothing otherwise). */
export function setAttributes(span: Span, attributes: () => Attributes): void {
  if (tracing && span.isRecording()) span.setAttributes(attributes());
}

/**
 * Records every finished call of a procedure or identity route in the metrics: the transports
 * name the call in `res.locals.procedure` once they know it, and the status is the one the client
 * got (whatever answered it: the handler, the binding layer or the error handler). Requests that
 * never reached a procedure (404, 429 before routing, /healthz) are not counted. Mounted next to
 * the access log, for the same reason: it sees the whole response.
 */
import type { RequestHandler } from 'express';
import type { Metrics } from '../telemetry/metrics.ts';

export function callMetrics(metrics: Metrics): RequestHandler {
  return (_req, res, next) => {
    const started = process.hrtime.bigint();
    let recorded = false;
    const record = () => {
      const procedure: unknown = res.locals.procedure;
      if (recorded || typeof procedure !== 'string') return;
      recorded = true;
      // A stream's duration is its lifetime, not a latency: counted, not timed.
      const stream = String(res.getHeader('content-type') ?? '').startsWith('text/event-stream');
      metrics.recordCall(procedure, res.statusCode, stream ? null : Number(process.hrtime.bigint() - started) / 1e9);
    };
    res.on('finish', record);
    res.on('close', record);
    next();
  };
}

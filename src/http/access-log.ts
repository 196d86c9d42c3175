/**
 * One pino line per request when its response has finished (or the client went away). An error
 * answer's line carries its code (`res.locals.errorCode`, set by error-handler.ts) and is logged
 * at error level for 5xx, warn for 4xx; every other line at info. With tracing on it carries the
 * request span's ids, taken here, inside the request's context: the response's events come in
 * the socket's (request-span.ts).
 */
import type { RequestHandler } from 'express';
import { logIds } from '../telemetry/tracing.ts';

export function accessLog(): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const ids = logIds();
    let logged = false;
    const log = () => {
      if (logged) return;
      logged = true;
      const status = res.statusCode;
      const code: unknown = res.locals.errorCode;
      const line = {
        ...ids,
        method: req.method,
        path: req.originalUrl.split('?')[0],
        status,
        ...(typeof code === 'string' ? { code } : {}),
        ms: Number(process.hrtime.bigint() - started) / 1e6,
        ip: req.clientIp,
        aborted: !res.writableFinished,
      };
      if (status >= 500) req.log.error(line, 'request');
      else if (status >= 400) req.log.warn(line, 'request');
      else req.log.info(line, 'request');
    };
    res.on('finish', log);
    res.on('close', log);
    next();
  };
}

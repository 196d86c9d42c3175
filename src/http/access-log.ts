/** One pino line per request when its response has finished (or the client went away). */
import type { RequestHandler } from 'express';

export function accessLog(): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    let logged = false;
    const log = () => {
      if (logged) return;
      logged = true;
      req.log.info({
        method: req.method,
        path: req.originalUrl.split('?')[0],
        status: res.statusCode,
        ms: Number(process.hrtime.bigint() - started) / 1e6,
        ip: req.clientIp,
        aborted: !res.writableFinished,
      }, 'request');
    };
    res.on('finish', log);
    res.on('close', log);
    next();
  };
}

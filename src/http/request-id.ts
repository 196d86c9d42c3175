/**
 * X-Request-Id: echo the client's value when it is well formed, otherwise a fresh UUID (the rule
 * Hono's request-id middleware applies). The id is on the response, on the access-log line and on
 * every log line of the request through `req.log`.
 */
import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '../logger.ts';

const WELL_FORMED = /^[A-Za-z0-9._:=+/-]{1,128}$/;

/**
 * The id of a request that sent `given` as its X-Request-Id (undefined: none): the same value when
 * well formed, else a fresh UUID. Also for the answers Node gives by itself (server-errors.ts).
 */
export function requestIdFor(given: string | string[] | undefined): string {
  return typeof given === 'string' && WELL_FORMED.test(given) ? given : randomUUID();
}

export function requestId(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const id = requestIdFor(req.get('x-request-id'));
    req.id = id;
    req.log = logger.child({ requestId: id });
    res.setHeader('X-Request-Id', id);
    next();
  };
}

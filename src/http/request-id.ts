/**
 * X-Request-Id: echo the client's value when it is well formed, otherwise a fresh UUID (the rule
 * Hono's request-id middleware applies). The id is on the response, on the access-log line and on
 * every log line of the request through `req.log`.
 */
import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from '../logger.ts';

const WELL_FORMED = /^[A-Za-z0-9._:=+\/-]{1,128}$/;

export function requestId(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const given = req.get('x-request-id');
    const id = given !== undefined && WELL_FORMED.test(given) ? given : randomUUID();
    req.id = id;
    req.log = logger.child({ requestId: id });
    res.setHeader('X-Request-Id', id);
    next();
  };
}

/**
 * Counts the API's requests in flight for the embedded database's gate (db/request-gate.ts): the
 * worker's jobs' statements wait while one is. Event streams stay open for minutes and wait on the
 * database only now and then, so they do not count.
 */
import type { RequestHandler } from 'express';
import type { RequestGate } from '../db/request-gate.ts';

export function countRequests(gate: RequestGate): RequestHandler {
  return (req, res, next) => {
    if (req.path.endsWith('/stream') || req.headers.accept?.includes('text/event-stream')) return next();
    const done = gate.enter();
    res.once('finish', done);
    res.once('close', done);
    next();
  };
}

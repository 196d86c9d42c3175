/**
 * CORS (specification, "Cross-cutting response headers"): the trusted origins plus the web URL,
 * with credentials; set-auth-token is readable by scripts and Last-Event-Id may be sent so a
 * browser can resume a job stream; Idempotency-Key may be sent and Idempotent-Replayed read, so a
 * browser can retry safely (docs/idempotency.md).
 */
import cors from 'cors';
import type { Request, RequestHandler } from 'express';
import type { Config } from '../config.ts';
import { allowedOrigins } from '../auth/trusted-origins.ts';

export { allowedOrigins };

export function corsPolicy(config: Pick<Config, 'trustedOrigins' | 'webUrl' | 'publicUrl'>): RequestHandler {
  const origins = allowedOrigins(config);
  const policy = cors({
    origin: (origin, callback) => callback(null, origin !== undefined && origins.has(origin)),
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Content-Type', 'Authorization', 'X-Request-Id', 'Last-Event-Id', 'Idempotency-Key'],
    exposedHeaders: ['set-auth-token', 'X-Request-Id', 'traceresponse', 'Retry-After', 'Idempotent-Replayed'],
    maxAge: 600,
  });
  return (req, res, next) => {
    // The cors package takes any OPTIONS from a trusted origin for a preflight. One that is not
    // goes on, and is answered like any method no operation declares (not-found.ts).
    if (req.method === 'OPTIONS' && !isPreflight(req)) {
      next();
      return;
    }
    policy(req, res, next);
  };
}

/** A CORS-preflight request (Fetch standard, "CORS-preflight fetch"): OPTIONS with Origin and Access-Control-Request-Method. */
export function isPreflight(req: Request): boolean {
  return req.method === 'OPTIONS' && req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined;
}

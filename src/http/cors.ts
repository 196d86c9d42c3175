/**
 * CORS (specification, "Cross-cutting response headers"): the trusted origins plus the web URL,
 * with credentials; set-auth-token is readable by scripts and Last-Event-Id may be sent so a
 * browser can resume a job stream.
 */
import cors from 'cors';
import type { RequestHandler } from 'express';
import type { Config } from '../config.ts';
import { allowedOrigins } from '../auth/trusted-origins.ts';

export { allowedOrigins };

export function corsPolicy(config: Pick<Config, 'trustedOrigins' | 'webUrl' | 'publicUrl'>): RequestHandler {
  const origins = allowedOrigins(config);
  return cors({
    origin: (origin, callback) => callback(null, origin !== undefined && origins.has(origin)),
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Content-Type', 'Authorization', 'X-Request-Id', 'Last-Event-Id'],
    exposedHeaders: ['set-auth-token', 'X-Request-Id', 'Retry-After'],
    maxAge: 600,
  });
}

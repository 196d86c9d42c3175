/**
 * Headers every API response carries (specification, "Cross-cutting response headers"):
 * a CSP that loads nothing and allows no framing, and no caching of private data. Routes with
 * their own rule (/healthz, /readyz, the OpenAPI documents, the reference pages) change
 * them where they answer.
 */
import type { RequestHandler, Response } from 'express';

export const CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";

export function securityHeaders(): RequestHandler {
  return (_req, res, next) => {
    res.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    res.setHeader('Cache-Control', 'private, no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  };
}

/** /healthz and /readyz set no cache header. */
export function withoutCacheHeader(res: Response): void {
  res.removeHeader('Cache-Control');
}

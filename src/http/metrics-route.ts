/**
 * GET /metrics, the telemetry resource (decisions.md, "Other"): Prometheus text format. Not a
 * procedure: like /healthz it lives outside /api/v1, so it is not in the contract's procedure
 * table, takes no session and is behind no per-IP limiter (a scraper polls it all day).
 * With METRICS_TOKEN set it needs `Authorization: Bearer <token>` (401 otherwise); without it,
 * it is open, which only development and test allow (config.ts refuses to start in production
 * without a token).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type Router } from 'express';
import type { Metrics } from '../telemetry/metrics.ts';

export function metricsRoute(options: { metrics: Metrics; token: string | undefined }): Router {
  const router = express.Router();
  router.get('/metrics', async (req, res, next) => {
    if (options.token !== undefined && !bearerMatches(req.get('authorization'), options.token)) {
      res.locals.errorCode = 'unauthorized';
      res.setHeader('WWW-Authenticate', 'Bearer realm="metrics"');
      res.status(401).json({ error: 'unauthorized', message: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.', requestId: req.id });
      return;
    }
    try {
      const body = await options.metrics.scrape();
      res.type(options.metrics.contentType).send(body);
    } catch (error) {
      next(error);
    }
  });
  return router;
}

/**
 * RFC 6750 §2.1 (the scheme is case-insensitive). Both sides are hashed first, so the comparison
 * takes the same time whatever the given token's length or content.
 */
function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^bearer +(\S+) *$/i.exec(header ?? '');
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(match?.[1] ?? ''), digest(token)) && match !== null;
}

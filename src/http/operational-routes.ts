/**
 * Routes outside the procedures: liveness, readiness and the OpenAPI document.
 * (specification, "Other routes")
 */
import { createHash } from 'node:crypto';
import express, { type RequestHandler, type Router } from 'express';
import { withoutCacheHeader } from './security-headers.ts';
import type { ReadinessResult } from './readiness.ts';

export function operationalRoutes(options: { document: object; ready: () => Promise<ReadinessResult> }): Router {
  const router = express.Router();

  router.get('/healthz', (_req, res) => {
    withoutCacheHeader(res);
    res.json({ status: 'ok' });
  });

  router.get('/readyz', async (_req, res) => {
    withoutCacheHeader(res);
    const result = await options.ready();
    if (result.ok) res.json({ status: 'ok', checks: { database: 'ok' } });
    else res.status(503).json({ status: 'unavailable', checks: { database: result.database } });
  });

  router.get('/api/v1/openapi.json', documentRoute(options.document));
  return router;
}

/** Serves a contract document built once per process, with an ETag, no-cache and 304 on a match. */
export function documentRoute(document: object): RequestHandler {
  const body = Buffer.from(JSON.stringify(document));
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  return (req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('ETag', etag);
    if (matchesEtag(req.get('if-none-match'), etag)) {
      res.status(304).end();
      return;
    }
    res.type('application/json').send(body);
  };
}

/** RFC 9110 §13.1.2: If-None-Match is `*` or a list of entity tags, compared weakly. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/**
 * Routes outside the procedures: liveness, readiness, the OpenAPI document and its reference page
 * (specification, "Other routes"). None is an operation of the contract.
 */
import { createHash } from 'node:crypto';
import express, { type RequestHandler, type Router } from 'express';
import { referencePage } from './reference-page.ts';
import { withoutCacheHeader } from './security-headers.ts';
import type { ReadinessResult } from './readiness.ts';

export interface OperationalRoutesOptions {
  /** Reads the procedures' contract, generated/openapi.json (deployment-neutral: a relative server), at its first request. */
  document: () => object;
  /**
   * PUBLIC_URL (config.publicUrl): the served document names `<publicUrl>/api/v1` as its first
   * server. Without it the document is served as generated, with only its relative server.
   */
  publicUrl?: string;
  ready: () => Promise<ReadinessResult>;
}

export function operationalRoutes(options: OperationalRoutesOptions): Router {
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

  router.get('/api/v1/openapi.json', documentRoute(options.document, options.publicUrl === undefined ? undefined : `${options.publicUrl}/api/v1`));
  // Inside the per-IP limiter like the document it renders (the page's assets count too).
  router.use('/api/v1/reference', referencePage({ title: 'Workspace API: reference', documentPath: '/api/v1/openapi.json' }));
  return router;
}

/**
 * Serves a contract document, serialized once (at its first request), with an ETag (a hash of the body,
 * so it changes with the document and with the server named), no-cache and 304 on a match.
 * `serverUrl` is the absolute address the document's paths live under on this deployment
 * (`<PUBLIC_URL>/api/v1`, `<PUBLIC_URL>/api/auth`): it becomes the first server, so SDKs generated
 * from the served document reach this deployment without being told where.
 */
export function documentRoute(readDocument: () => object, serverUrl?: string): RequestHandler {
  // Read and serialized at the first request, not at start: the documents take tens of
  // milliseconds to parse, write out and hash, which every start would wait for (bench/start.ts).
  // Only the serialized body stays in memory.
  let built: { body: Buffer; etag: string } | undefined;
  const build = () => {
    const document = readDocument();
    const served = serverUrl === undefined ? document : withServer(document as ContractDocument, serverUrl);
    const body = Buffer.from(JSON.stringify(served));
    return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
  };
  return (req, res) => {
    built ??= build();
    const { body, etag } = built;
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('ETag', etag);
    if (matchesEtag(req.get('if-none-match'), etag)) {
      res.status(304).end();
      return;
    }
    res.type('application/json').send(body);
  };
}

interface Server {
  url: string;
  description?: string;
}

interface ContractDocument {
  servers?: Server[];
  paths?: Record<string, { servers?: Server[] } & Record<string, unknown>>;
}

/**
 * The document with `url` as its first server; the generated servers (the relative one) follow.
 * Paths with servers of their own (the `/uploads` addresses live at the service root, not under
 * `/api/v1`) get this deployment's absolute address first too, built from the same public URL.
 */
export function withServer<T extends ContractDocument>(document: T, url: string): T {
  const deployment = (server: Server): Server => ({ url: server.url, description: 'This deployment (its PUBLIC_URL).' });
  const relative = document.servers?.find((server) => server.url.startsWith('/'))?.url;
  const publicUrl = relative !== undefined && url.endsWith(relative) ? url.slice(0, url.length - relative.length) : undefined;
  const paths = Object.fromEntries(
    Object.entries(document.paths ?? {}).map(([path, item]) => {
      const own = item.servers?.find((server) => server.url.startsWith('/'));
      if (publicUrl === undefined || own === undefined) return [path, item];
      const absolute = `${publicUrl}${own.url === '/' ? '' : own.url}` || '/';
      return [path, { ...item, servers: [deployment({ url: absolute }), ...item.servers!.filter((server) => server.url !== absolute)] }];
    }),
  );
  const others = (document.servers ?? []).filter((server) => server.url !== url);
  return { ...document, ...(document.paths ? { paths } : {}), servers: [deployment({ url }), ...others] };
}

/** RFC 9110 §13.1.2: If-None-Match is `*` or a list of entity tags, compared weakly. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

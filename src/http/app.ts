/**
 * The HTTP layer assembled: middleware, transports and routers in their order, over services the
 * composition root built (composition/compose.ts), without listening. Knows no feature: the
 * handlers come in as tables keyed by operation name.
 */
import { readFileSync } from 'node:fs';
import express, { type Express, type RequestHandler } from 'express';
import type { Handlers, Services, StreamHandlers, AuthHandlers } from '../context.ts';
import type { LimiterFactory } from '../auth/rate-limit.ts';
import { sessionMiddleware } from './session-middleware.ts';
import { LocalDriver } from '../storage/local-driver.ts';
import { uploadRoutes } from '../storage/upload-routes.ts';
import { describeDocument } from '../documents/store.ts';
import { badRequest } from '../contract/errors.ts';
import { createMetrics } from '../telemetry/metrics.ts';
import { originCheck } from './origin-check.ts';
import { identityRouter } from './identity-transport.ts';
import { accessLog } from './access-log.ts';
import { clientIp, configureTrustProxy } from './client-ip.ts';
import { allowedOrigins, corsPolicy } from './cors.ts';
import { errorHandler, MAX_BODY_BYTES, sendError } from './error-handler.ts';
import { identityLimiter } from './identity-limiter.ts';
import { ipLimiter } from './ip-limiter.ts';
import { jsonBody } from './json-body.ts';
import { lingeringClose } from './lingering-close.ts';
import { notFound, undeclaredOptions } from './not-found.ts';
import { operationalRoutes } from './operational-routes.ts';
import { metricsRoute } from './metrics-route.ts';
import { callMetrics } from './call-metrics.ts';
import { createReadinessCheck } from './readiness.ts';
import { countRequests } from './request-count.ts';
import { requestId } from './request-id.ts';
import { requestSpans } from './request-span.ts';
import { restRouter } from './rest-transport.ts';
import { rpcRouter } from './rpc-transport.ts';
import { securityHeaders } from './security-headers.ts';

// Served as they are (the published documents, written by codegen), never read here otherwise;
// read at their first request (documentRoute), not at every start.
const contractDocument = () => JSON.parse(readFileSync(new URL('../../generated/openapi.json', import.meta.url), 'utf8')) as object;
const authDocument = () => JSON.parse(readFileSync(new URL('../../generated/auth-openapi.json', import.meta.url), 'utf8')) as object;

export interface HttpAppOptions {
  services: Services;
  /** Makes the per-address limiters (in PostgreSQL on a database server, in memory otherwise). */
  limit: LimiterFactory;
  handlers: Handlers;
  streams: StreamHandlers;
  identityHandlers: AuthHandlers;
}

export function buildHttpApp(options: HttpAppOptions): Express {
  const { services, limit, handlers, streams } = options;
  const { config, db, logger, secret, now } = services;

  const app = express();
  app.disable('x-powered-by');
  // ETags only where a route sets one (the OpenAPI document); upload PUTs must carry none.
  app.set('etag', false);
  configureTrustProxy(app, config.trustProxy);
  // Read by error-handler.ts: error answers are checked against the contract where success answers are.
  app.locals.validateResponses = config.validateResponses;

  // A registry per app, not prom-client's global one: tests build many apps in one process.
  const metrics = createMetrics({ sql: db.sql, logger, jobs: services.jobMetrics });
  // First: any answer, from anywhere below, sent before its request's body was read closes the
  // connection only after reading the rest (lingering-close.ts).
  app.use(lingeringClose());
  // The request's span right after its id, so that the access-log line and everything below it
  // (limiters, body, session, the call) run inside it (request-span.ts).
  app.use(countRequests(services.requests), clientIp(), requestId(logger), requestSpans(config.tracing), accessLog(), callMetrics(metrics), securityHeaders(), corsPolicy(config), wellEncodedPath());
  // OPTIONS that is not a trusted preflight: 405 or 404 like any undeclared method, before a router answers it.
  app.use(undeclaredOptions());
  // Before the limiters (it is outside them anyway): a scraper polls it all day.
  app.use(metricsRoute({ metrics, token: config.metricsToken }));
  const trusted = allowedOrigins(config);
  // The limiters first: a flood of made-up tokens is refused before each costs a session lookup.
  app.use(['/rpc', '/api/v1'], ipLimiter(config.rateLimitPerMinute, limit));
  app.use('/api/auth', identityLimiter(config.authRateLimitPerMinute, limit));
  // The CSRF check before the body is read; the body before the session lookup, so a refused body costs no query.
  app.use(['/rpc', '/api/v1', '/api/auth'], originCheck(trusted), jsonBody({ limit: MAX_BODY_BYTES }), sessionMiddleware(services));
  app.use(operationalRoutes({ document: contractDocument, publicUrl: config.publicUrl, ready: createReadinessCheck(() => db.ping()) }));
  // The local driver's stand-in for a bucket; with S3 the routes do not exist.
  if (services.storage instanceof LocalDriver) {
    app.use(uploadRoutes({ driver: services.storage, secret, maxUploadBytes: config.maxUploadBytes, now, describe: (organizationId, documentId) => describeDocument(db.sql, organizationId, documentId) }));
  }
  app.use('/api/v1', restRouter(handlers, streams, services));
  app.use('/rpc', rpcRouter(handlers, streams, services));
  app.use('/api/auth', identityRouter({ document: authDocument, handlers: options.identityHandlers, services }));
  app.use(notFound());
  app.use(errorHandler());
  return app;
}

/**
 * A path whose percent-escapes do not decode (`/documents/%ff`, a lone `%`) answers 400 before
 * any limiter, session or route sees it: routers, path parameters and the database only ever get
 * text that decodes.
 */
function wellEncodedPath(): RequestHandler {
  return (req, res, next) => {
    try {
      decodeURIComponent(req.path);
    } catch {
      const message = 'The path is not valid percent-encoding.';
      sendError(req, res, badRequest([{ path: [], message }], message));
      return;
    }
    next();
  };
}

/**
 * The app factory: everything the HTTP service does, assembled once, without listening. Tests
 * and the `serve` command both call buildApp and then listen where they like.
 */
import { readFileSync } from 'node:fs';
import express, { type Express, type RequestHandler } from 'express';
import type { Config } from '../config.ts';
import type { Handlers, Services } from '../context.ts';
import type { Database } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import { sessionAuthenticator } from '../auth/authenticate.ts';
import { originCheck } from './origin-check.ts';
import { databaseMemberships } from '../auth/memberships.ts';
import { sessionMiddleware } from '../auth/session-middleware.ts';
import { identityRouter } from './identity-transport.ts';
import { authHandlers } from '../auth/routes.ts';
import type { AuthHandlers } from '../auth/identity-route.ts';
import { createMailer } from '../email/providers.ts';
import { billedPlans, unbilled } from '../billing/plans.ts';
import { resolveSecret } from '../secret.ts';
import { createAiClient } from '../ai-service/client.ts';
import { startJobQueue, type QueueOptions } from '../jobs/queue.ts';
import { startWorker } from '../jobs/worker.ts';
import { withDeadline } from '../db/deadline.ts';
import { createStorageDriver } from '../storage/create-driver.ts';
import { LocalDriver } from '../storage/local-driver.ts';
import { uploadRoutes } from '../storage/upload-routes.ts';
import { describeDocument } from '../documents/store.ts';
import { handlers as allHandlers, streamHandlers } from '../procedures.ts';
import { accessLog } from './access-log.ts';
import { clientIp, configureTrustProxy } from './client-ip.ts';
import { allowedOrigins, corsPolicy } from './cors.ts';
import { errorHandler, MAX_BODY_BYTES, sendError } from './error-handler.ts';
import { identityLimiter } from './identity-limiter.ts';
import { ipLimiter } from './ip-limiter.ts';
import { jsonBody } from './json-body.ts';
import { notFound, undeclaredOptions } from './not-found.ts';
import { operationalRoutes } from './operational-routes.ts';
import { metricsRoute } from './metrics-route.ts';
import { callMetrics } from './call-metrics.ts';
import { createMetrics } from '../telemetry/metrics.ts';
import { byAddress } from '../auth/rate-limit.ts';
import { rateLimiters } from '../auth/shared-rate-limit.ts';
import { createReadinessCheck } from './readiness.ts';
import { badRequest } from '../contract/errors.ts';
import { requestId } from './request-id.ts';
import { restRouter } from './rest-transport.ts';
import { rpcRouter } from './rpc-transport.ts';
import { securityHeaders } from './security-headers.ts';
import type { StreamHandlers } from './streams.ts';

const contractDocument = JSON.parse(readFileSync(new URL('../../generated/openapi.json', import.meta.url), 'utf8'));
const authDocument = JSON.parse(readFileSync(new URL('../../generated/auth-openapi.json', import.meta.url), 'utf8'));

export interface AppOptions {
  config: Config;
  db: Database;
  logger: Logger;
  /** Replace parts of the service (tests); the defaults are the real ones. */
  overrides?: Partial<Pick<Services, 'authenticate' | 'memberships' | 'mailer' | 'now' | 'plans' | 'storage' | 'ai' | 'streamTiming'>> & {
    /** Queue timing (tests shorten the retry backoff and the polling). */
    queue?: Pick<QueueOptions, 'retryDelaySeconds' | 'pollingSeconds'>;
    handlers?: Handlers;
    streams?: StreamHandlers;
    authHandlers?: AuthHandlers;
  };
}

export interface App {
  app: Express;
  services: Services;
  /** Stops the inline worker (letting running jobs finish) and the queue; the database stays open. */
  stop(): Promise<void>;
}

export async function buildApp(options: AppOptions): Promise<App> {
  const { config, db, logger, overrides = {} } = options;
  const now = overrides.now ?? (() => new Date());
  const clock = () => now().getTime();
  const secret = resolveSecret(config);
  // In PostgreSQL on a database server (shared by every instance), in memory on the embedded one.
  const limit = rateLimiters({ db, now: clock, logger });
  const services: Services = {
    config,
    db,
    logger,
    now,
    // Real time, not the service clock: uptime is about this process, whatever tests do to now().
    startedAt: new Date(),
    memberships: overrides.memberships ?? databaseMemberships(db.sql),
    authenticate: overrides.authenticate ?? sessionAuthenticator(db.sql, now),
    mailer: overrides.mailer === undefined ? createMailer(config, logger) : overrides.mailer,
    limiters: {
      contact: byAddress(limit('contact', { limit: 5, windowMs: 10 * 60_000 })),
      // Keyed by signInKey (email and address): 5 tries at one account from one client per 15 minutes.
      signInEmail: limit('sign-in.email', { limit: 5, windowMs: 15 * 60_000 }),
      signInAddress: byAddress(limit('sign-in.address', { limit: config.authRateLimitPerMinute * 5, windowMs: 15 * 60_000 })),
      search: limit('search', { limit: 30, windowMs: 60_000 }),
    },
    // Plan limits apply only while billing is configured (decisions.md, Plans).
    plans: overrides.plans ?? (config.billing ? billedPlans(db.sql, now) : unbilled),
    secret,
    storage: overrides.storage ?? createStorageDriver(config, secret),
    ...(overrides.streamTiming ? { streamTiming: overrides.streamTiming } : {}),
    ai: overrides.ai ?? createAiClient({ url: config.ai.url, apiKey: config.ai.apiKey, model: config.ai.openai.model }),
    queue: await startJobQueue({ db, settings: config.worker, logger, worker: config.worker.mode === 'inline', ...overrides.queue }),
  };
  if (config.worker.mode === 'inline') {
    // The jobs' deadline for everything the worker does (db/deadline.ts), not the API's.
    await withDeadline(config.database.jobDeadlineMs, () => startWorker({
      queue: services.queue, sql: db.sql, storage: services.storage, ai: services.ai, plans: services.plans,
      maxCharacters: config.ai.extraction.maxCharacters, now, logger, concurrency: config.worker.concurrency, batchSize: config.worker.batchSize,
    }));
  }
  const handlers = { ...allHandlers, ...overrides.handlers };
  const streams = { ...streamHandlers, ...overrides.streams };

  const app = express();
  app.disable('x-powered-by');
  // ETags only where a route sets one (the OpenAPI document); upload PUTs must carry none.
  app.set('etag', false);
  configureTrustProxy(app, config.trustProxy);

  // A registry per app, not prom-client's global one: tests build many apps in one process.
  const metrics = createMetrics({ sql: db.sql, logger });
  app.use(clientIp(), requestId(logger), accessLog(), callMetrics(metrics), securityHeaders(), corsPolicy(config), wellEncodedPath());
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
  app.use('/api/v1', await restRouter(contractDocument, handlers, streams, services));
  app.use('/rpc', rpcRouter(handlers, streams, services));
  app.use('/api/auth', identityRouter({ document: authDocument, handlers: { ...authHandlers, ...overrides.authHandlers }, services }));
  app.use(notFound());
  app.use(errorHandler());
  return { app, services, stop: () => services.queue.stop() };
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

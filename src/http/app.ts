/**
 * The app factory: everything the HTTP service does, assembled once, without listening. Tests
 * and the `serve`/`api` commands both call buildApp and then listen where they like.
 */
import { readFileSync } from 'node:fs';
import express, { type Express } from 'express';
import type { Config } from '../config.ts';
import type { Handlers, Services } from '../context.ts';
import type { Database } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import type { Memberships } from '../auth/access.ts';
import { handlers as allHandlers, streamHandlers } from '../procedures.ts';
import { accessLog } from './access-log.ts';
import { clientIp } from './client-ip.ts';
import { corsPolicy } from './cors.ts';
import { errorHandler, MAX_BODY_BYTES } from './error-handler.ts';
import { ipLimiter } from './ip-limiter.ts';
import { notFound } from './not-found.ts';
import { operationalRoutes } from './operational-routes.ts';
import { createRateLimiter } from './rate-limit.ts';
import { createReadinessCheck } from './readiness.ts';
import { requestId } from './request-id.ts';
import { restRouter } from './rest-transport.ts';
import { rpcRouter } from './rpc-transport.ts';
import { securityHeaders } from './security-headers.ts';
import type { StreamHandlers } from './streams.ts';

const contractDocument = JSON.parse(readFileSync(new URL('../../generated/openapi.json', import.meta.url), 'utf8'));

export interface AppOptions {
  config: Config;
  db: Database;
  logger: Logger;
  /** Replace parts of the service (tests); the defaults are the real ones. */
  overrides?: Partial<Pick<Services, 'authenticate' | 'memberships' | 'mailer'>> & {
    handlers?: Handlers;
    streams?: StreamHandlers;
    now?: () => number;
  };
}

/** Until the identity tables exist nobody belongs to an organization and no workspace exists. */
const noMemberships: Memberships = {
  roleIn: async () => null,
  workspaceOrganization: async () => null,
};

export async function buildApp(options: AppOptions): Promise<{ app: Express; services: Services }> {
  const { config, db, logger, overrides = {} } = options;
  const now = overrides.now;
  const services: Services = {
    config,
    db,
    logger,
    memberships: overrides.memberships ?? noMemberships,
    authenticate: overrides.authenticate ?? (async () => null),
    mailer: overrides.mailer ?? null,
    limiters: { contact: createRateLimiter({ limit: 5, windowMs: 10 * 60_000, ...(now ? { now } : {}) }) },
  };
  const handlers = { ...allHandlers, ...overrides.handlers };
  const streams = { ...streamHandlers, ...overrides.streams };

  const app = express();
  app.disable('x-powered-by');
  // ETags only where a route sets one (the OpenAPI document); upload PUTs must carry none.
  app.set('etag', false);

  app.use(clientIp(config.trustProxy), requestId(logger), accessLog(), securityHeaders(), corsPolicy(config));
  app.use(['/rpc', '/api/v1'], ipLimiter(config.rateLimitPerMinute, now), express.json({ limit: MAX_BODY_BYTES, type: () => true, strict: false }));
  app.use(operationalRoutes({ document: contractDocument, ready: createReadinessCheck(() => db.ping()) }));
  app.use('/api/v1', await restRouter(contractDocument, handlers, streams, services));
  app.use('/rpc', rpcRouter(handlers, streams, services));
  app.use(notFound());
  app.use(errorHandler());
  return { app, services };
}

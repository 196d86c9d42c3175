/**
 * The client's address for limiting, sessions and logs. Express works it out from its `trust
 * proxy` setting (TRUST_PROXY, see config.ts): with no proxy trusted it is the socket address;
 * behind trusted proxies it is the rightmost X-Forwarded-For entry a trusted proxy wrote, so
 * whatever a client puts at the left of the header is ignored and a proxy that appends gives
 * every client its own address.
 *
 * Limiters key on `addressKey` (auth/rate-limit.ts): an IPv6 client counts by its /64.
 */
import type { Express, RequestHandler } from 'express';
import type { Config } from '../config.ts';
import { normalizeAddress } from '../auth/rate-limit.ts';

export { normalizeAddress };

/** Sets Express's `trust proxy` from TRUST_PROXY (false, a hop count, or a list of proxies). */
export function configureTrustProxy(app: Express, trustProxy: Config['trustProxy']): void {
  app.set('trust proxy', Array.isArray(trustProxy) ? trustProxy.join(',') : trustProxy);
}

export function clientIp(): RequestHandler {
  return (req, _res, next) => {
    req.clientIp = normalizeAddress(req.ip ?? req.socket.remoteAddress ?? 'unknown');
    next();
  };
}

/**
 * The client's address for limiting, sessions and logs. Express works it out from its `trust
 * proxy` setting (TRUST_PROXY, see config.ts): with no proxy trusted it is the socket address;
 * behind trusted proxies it is the rightmost X-Forwarded-For entry a trusted proxy wrote, so
 * whatever a client puts at the left of the header is ignored and a proxy that appends gives
 * every client its own address.
 *
 * Limiters key on `addressKey` (auth/rate-limit.ts): an IPv6 client counts by its /64.
 */
import { isIP } from 'node:net';
import type { Express, RequestHandler } from 'express';
import type { Config } from '../config.ts';

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

/** IPv4-mapped IPv6 (::ffff:1.2.3.4) is the same client as 1.2.3.4; a zone index is dropped. */
export function normalizeAddress(address: string): string {
  const bare = address.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(bare);
  if (mapped && isIP(mapped[1]!) === 4) return mapped[1]!;
  return isIP(bare) === 6 ? bare.toLowerCase() : isIP(bare) === 4 ? bare : address;
}

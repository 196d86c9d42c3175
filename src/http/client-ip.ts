/**
 * The client's address for limiting and logs. x-forwarded-for is believed only when a setting says
 * a proxy is in front, and only when it holds exactly one address: a list could have been started
 * by the client itself, so it is ignored rather than guessed at.
 */
import { isIP } from 'node:net';
import type { RequestHandler } from 'express';

export function clientIp(trustProxy: boolean): RequestHandler {
  return (req, _res, next) => {
    req.clientIp = resolveClientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], trustProxy);
    next();
  };
}

export function resolveClientIp(socketAddress: string | undefined, forwarded: string | string[] | undefined, trustProxy: boolean): string {
  const direct = normalize(socketAddress ?? 'unknown');
  if (!trustProxy || typeof forwarded !== 'string') return direct;
  const value = forwarded.trim();
  return isIP(value) ? normalize(value) : direct;
}

/** IPv4-mapped IPv6 (::ffff:1.2.3.4) is the same client as 1.2.3.4. */
function normalize(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** The shared per-IP limiter on /rpc/* and /api/v1/* (300 per minute by default); an IPv6 client counts by its /64. */
import type { RequestHandler } from 'express';
import { sendError } from './error-handler.ts';
import { addressKey, createRateLimiter, refusal } from '../auth/rate-limit.ts';

export function ipLimiter(limitPerMinute: number, now?: () => number): RequestHandler {
  const limiter = createRateLimiter({ limit: limitPerMinute, windowMs: 60_000, ...(now ? { now } : {}) });
  return (req, res, next) => {
    const refused = refusal(limiter, addressKey(req.clientIp), 'Too many requests from this address, try again in a minute.');
    if (refused) sendError(req, res, refused);
    else next();
  };
}

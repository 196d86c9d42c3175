/**
 * The shared per-IP limiter on /rpc/* and /api/v1/* (300 per minute by default); an IPv6 client
 * counts by its /64. On a database server the count is shared by every API instance.
 */
import type { RequestHandler } from 'express';
import { sendError } from './error-handler.ts';
import { addressKey, refusal, type LimiterFactory } from '../auth/rate-limit.ts';

export function ipLimiter(limitPerMinute: number, limiters: LimiterFactory): RequestHandler {
  const limiter = limiters('ip', { limit: limitPerMinute, windowMs: 60_000 });
  return async (req, res, next) => {
    const refused = await refusal(limiter, addressKey(req.clientIp), 'Too many requests from this address, try again in a minute.');
    if (refused) sendError(req, res, refused);
    else next();
  };
}

/** The shared per-IP limiter on /rpc/* and /api/v1/* (300 per minute by default); an IPv6 client counts by its /64. */
import type { RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';
import { sendError } from './error-handler.ts';
import { addressKey, createRateLimiter } from '../auth/rate-limit.ts';

export function ipLimiter(limitPerMinute: number, now?: () => number): RequestHandler {
  const limiter = createRateLimiter({ limit: limitPerMinute, windowMs: 60_000, ...(now ? { now } : {}) });
  return (req, res, next) => {
    const result = limiter.hit(addressKey(req.clientIp));
    if (result.allowed) {
      next();
      return;
    }
    const headers = { 'Retry-After': String(result.retryAfterSeconds) };
    sendError(req, res, new ApiError('TOO_MANY_REQUESTS', { message: 'Too many requests from this address, try again in a minute.', headers }));
  };
}

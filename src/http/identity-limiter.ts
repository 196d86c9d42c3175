/**
 * The identity limiter on /api/auth/*, before the session lookup (as the shared per-IP limiter is
 * on /rpc and /api/v1): a flood of requests is refused before each costs a database query.
 * Every identity request counts against a general per-address budget (10 × AUTH_RATE_LIMIT_PER_MINUTE
 * a minute); the routes where guessing pays (SENSITIVE) also count against a tight shared one
 * (AUTH_RATE_LIMIT_PER_MINUTE a minute). Addresses are keyed by `addressKey` (an IPv6 client by its /64).
 * On a database server the counts are shared by every API instance.
 */
import type { RequestHandler } from 'express';
import { addressKey, refusal, type LimiterFactory } from '../auth/rate-limit.ts';
import { sendError } from './error-handler.ts';
import { findRoute } from './route-lookup.ts';

/** Routes where guessing pays: sign-up, sign-in, reset and verification mail get a tight per-address budget. */
export const SENSITIVE: readonly string[] = ['auth.signUpEmail', 'auth.signInEmail', 'auth.requestPasswordReset', 'auth.sendVerificationEmail', 'auth.resetPassword', 'auth.changePassword'];

const MESSAGE = 'Too many attempts, try again in a minute.';

export function identityLimiter(limitPerMinute: number, limiters: LimiterFactory): RequestHandler {
  const general = limiters('identity', { limit: limitPerMinute * 10, windowMs: 60_000 });
  const sensitive = limiters('identity.sensitive', { limit: limitPerMinute, windowMs: 60_000 });
  return async (req, res, next) => {
    const key = addressKey(req.clientIp);
    const route = findRoute(req.method, req.baseUrl + req.path);
    const refused = (await refusal(general, key, MESSAGE)) ?? (route && SENSITIVE.includes(route.name) ? await refusal(sensitive, key, MESSAGE) : undefined);
    if (refused) {
      sendError(req, res, refused);
      return;
    }
    next();
  };
}

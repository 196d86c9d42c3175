/**
 * The identity limiter on /api/auth/*, before the session lookup (as the shared per-IP limiter is
 * on /rpc and /api/v1): a flood of requests is refused before each costs a database query.
 * Every identity request counts against a general per-address budget (10 × AUTH_RATE_LIMIT_PER_MINUTE
 * a minute); the routes where guessing pays (SENSITIVE) also count against a tight shared one
 * (AUTH_RATE_LIMIT_PER_MINUTE a minute). Addresses are keyed by `addressKey` (an IPv6 client by its /64).
 * On a database server the counts are shared by every API instance.
 *
 * The tight budget goes by the route the path names however it is spelled (`canonicalPath`): the
 * identity router matches `/Api/Auth/Request-Password-Reset` as the lower-case route, so a budget
 * chosen by the path as written gave every spelling a budget of its own (10 × the rate).
 */
import type { RequestHandler } from 'express';
import { addressKey, refusal, type LimiterFactory } from '../auth/rate-limit.ts';
import { sendError } from './error-handler.ts';
import { canonicalPath, findRoute } from './route-lookup.ts';

/**
 * Every route that checks a secret (a password, a reset or verification token) or sends mail gets
 * a tight per-address budget (identity.md; test/http/identity-limit-paths.test.ts walks the list).
 * The invitation routes too (issue 40): inviteMember mails an address its caller chose, and the
 * others answer for invitation ids that mails carry.
 */
export const SENSITIVE: readonly string[] = [
  'auth.signUpEmail',
  'auth.signInEmail',
  'auth.requestPasswordReset',
  'auth.sendVerificationEmail',
  'auth.resetPassword',
  'auth.changePassword',
  'auth.organization.inviteMember',
  'auth.organization.acceptInvitation',
  'auth.organization.rejectInvitation',
  'auth.organization.cancelInvitation',
];

const MESSAGE = 'Too many attempts, try again in a minute.';

export function identityLimiter(limitPerMinute: number, limiters: LimiterFactory): RequestHandler {
  const general = limiters('identity', { limit: limitPerMinute * 10, windowMs: 60_000 });
  const sensitive = limiters('identity.sensitive', { limit: limitPerMinute, windowMs: 60_000 });
  return async (req, res, next) => {
    const key = addressKey(req.clientIp);
    // req.baseUrl is the mount (/api/auth, app.ts) as the client spelled it: made canonical with the rest.
    const route = findRoute(req.method, canonicalPath(req.baseUrl + req.path));
    const refused = (await refusal(general, key, MESSAGE)) ?? (route && SENSITIVE.includes(route.name) ? await refusal(sensitive, key, MESSAGE) : undefined);
    if (refused) {
      sendError(req, res, refused);
      return;
    }
    next();
  };
}

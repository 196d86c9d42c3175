/**
 * CSRF (docs/identity.md, "The CSRF rule"): a state-changing request that carries a Cookie header must come from
 * a trusted origin. Bearer requests skip the check: a browser never attaches a bearer token on its
 * own, so a forged request cannot carry one.
 *
 * Sign-in and sign-up are checked even without a cookie (login CSRF): a page elsewhere could
 * otherwise sign the victim's browser into the attacker's account, whose session cookie the
 * answer sets. A browser always sends Origin on a cross-site POST, so an untrusted (or `null`)
 * Origin is refused; a request with no Origin at all (a server-to-server SDK, curl) is not a
 * browser's and stays allowed.
 */
import type { RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';
import { sendError } from './error-handler.ts';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** POST routes that hand out a session cookie to whoever calls them. */
const SIGN_IN = new Set(['/api/auth/sign-in/email', '/api/auth/sign-up/email', '/api/auth/sign-in/social']);

export function originCheck(trusted: Set<string>): RequestHandler {
  return (req, res, next) => {
    const origin = req.get('origin');
    if (req.method === 'POST' && origin !== undefined && SIGN_IN.has(req.baseUrl + req.path) && !trusted.has(origin)) {
      sendError(req, res, new ApiError('FORBIDDEN', { message: 'Cross-site sign-in refused: the Origin is not trusted.' }));
      return;
    }
    if (SAFE.has(req.method) || !req.headers.cookie || /^Bearer\s/i.test(req.get('authorization') ?? '')) {
      next();
      return;
    }
    if (origin && trusted.has(origin)) {
      next();
      return;
    }
    sendError(req, res, new ApiError('FORBIDDEN', { message: 'Cross-site request refused: the Origin is not trusted.' }));
  };
}

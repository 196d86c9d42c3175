/**
 * CSRF (design/identity.md): a state-changing request that carries a Cookie header must come from
 * a trusted origin. Bearer requests skip the check: a browser never attaches a bearer token on its
 * own, so a forged request cannot carry one.
 */
import type { RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';
import { sendError } from './error-handler.ts';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export function originCheck(trusted: Set<string>): RequestHandler {
  return (req, res, next) => {
    if (SAFE.has(req.method) || !req.headers.cookie || /^Bearer\s/i.test(req.get('authorization') ?? '')) {
      next();
      return;
    }
    const origin = req.get('origin');
    if (origin && trusted.has(origin)) {
      next();
      return;
    }
    sendError(req, res, new ApiError('FORBIDDEN', { message: 'Cross-site request refused: the Origin is not trusted.' }));
  };
}

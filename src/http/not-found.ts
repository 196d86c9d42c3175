/**
 * The last stop: a path the contract declares but with another method answers 405 with Allow;
 * anything else answers 404 in the error envelope. OPTIONS, which no operation declares, gets the
 * same answer ahead of the routers (`undeclaredOptions`).
 */
import type { RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';
import { sendError } from './error-handler.ts';
import { allowedMethods } from './route-lookup.ts';

export function notFound(): RequestHandler {
  return (req, res) => {
    const allowed = allowedMethods(req.path);
    const error =
      allowed.length > 0
        ? new ApiError('METHOD_NOT_ALLOWED', { message: `${req.method} is not allowed here.`, headers: { Allow: allowed.join(', ') } })
        : new ApiError('NOT_FOUND', { message: `No route for ${req.method} ${req.path}.` });
    sendError(req, res, error);
  };
}

/** Routes that take every method and answer OPTIONS as they answer any other (their own 405 or 404). */
const OWN_ANSWER = /^\/(rpc|uploads)\//i;

/**
 * An OPTIONS request the CORS policy did not answer (no preflight from a trusted origin) is a
 * method no operation declares, so it gets notFound's answer: 405 with Allow, or 404. Mounted
 * before the routers, because each Express router answers an OPTIONS that none of its routes
 * takes by itself, with 200 text/plain and an Allow list of its own (naming HEAD where the
 * identity routes refuse it).
 */
export function undeclaredOptions(): RequestHandler {
  const answer = notFound();
  return (req, res, next) => {
    if (req.method !== 'OPTIONS' || OWN_ANSWER.test(req.path)) {
      next();
      return;
    }
    answer(req, res, next);
  };
}

/**
 * The last stop: a path the contract declares but with another method answers 405 with Allow;
 * anything else answers 404 in the error envelope.
 */
import type { RequestHandler } from 'express';
import { ApiError } from '../contract/errors.ts';
import { sendError } from './error-handler.ts';
import { allowedMethods } from './route-lookup.ts';

export function notFound(): RequestHandler {
  return (req, res) => {
    const allowed = allowedMethods(req.path);
    const error = allowed.length > 0
      ? new ApiError('METHOD_NOT_ALLOWED', { message: `${req.method} is not allowed here.`, headers: { Allow: allowed.join(', ') } })
      : new ApiError('NOT_FOUND', { message: `No route for ${req.method} ${req.path}.` });
    sendError(req, res, error);
  };
}

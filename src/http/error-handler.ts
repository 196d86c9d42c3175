/**
 * Turns anything thrown while answering into the right body: an ApiError into the error envelope,
 * body-parser's refusals into 413 payload_too_large or 400, and everything else into the generic
 * 500 `{ error: 'internal_error', requestId }`, with the cause logged once.
 */
import type { ErrorRequestHandler, Request, Response } from 'express';
import { WireError } from '../rpc/wire.ts';
import { ApiError, badRequest } from '../contract/errors.ts';
import { findRoute } from './route-lookup.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

export function sendError(req: Request, res: Response, error: unknown, declared?: readonly string[]): void {
  if (res.headersSent) {
    req.log.error({ err: error }, 'error after the response started');
    res.destroy();
    return;
  }
  const known = toApiError(error);
  if (known) {
    // Errors raised before routing (limiter, body parser) learn the operation from the path.
    const codes = declared ?? findRoute(req.method, req.originalUrl.split('?')[0]!)?.errors ?? [];
    res.status(known.status).set(known.headers).json(known.toBody(codes));
    return;
  }
  if (isBodyError(error) && error.type === 'entity.too.large') {
    res.status(413).json({ error: 'payload_too_large', message: `Request body exceeds ${MAX_BODY_BYTES} bytes.`, requestId: req.id });
    return;
  }
  req.log.error({ err: error }, 'internal error');
  res.status(500).json({ error: 'internal_error', requestId: req.id });
}

function toApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (error instanceof WireError) return badRequest([{ path: [], message: error.message }], error.message);
  if (isBodyError(error) && error.type !== 'entity.too.large' && error.status < 500) {
    const message = error.type === 'entity.parse.failed' ? 'The request body is not valid JSON.' : error.message;
    return badRequest([{ path: [], message }], message);
  }
  return undefined;
}

interface BodyParserError extends Error {
  type: string;
  status: number;
}

function isBodyError(error: unknown): error is BodyParserError {
  return error instanceof Error && typeof (error as BodyParserError).type === 'string' && typeof (error as BodyParserError).status === 'number';
}

export function errorHandler(): ErrorRequestHandler {
  return (error, req, res, _next) => sendError(req, res, error);
}

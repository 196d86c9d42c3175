/**
 * Turns anything thrown while answering into the right body: an ApiError into the error envelope,
 * the body reader's refusals (body-parser's and json-body.ts's) into 413 payload_too_large or 400,
 * bad bytes in the path and database refusals of the input's text into 400, a database that cannot
 * be reached or did not answer by its deadline into 503 SERVICE_UNAVAILABLE, and everything else into the generic 500
 * `{ error: 'internal_error', requestId }`, with the cause logged once. The code of every error
 * answer is left on `res.locals.errorCode` for the access-log line.
 */
import type { ErrorRequestHandler, Request, Response } from 'express';
import { WireError } from '../rpc/wire.ts';
import { ApiError, badRequest } from '../contract/errors.ts';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { findRoute } from './route-lookup.ts';
import { outputValidator } from '../contract/validators.ts';
import type { ProcedureDefinition } from '../../generated/procedures.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

/** The message of a 503 for the database: generic, as the specification asks of SERVICE_UNAVAILABLE. */
const DATABASE_UNAVAILABLE = 'The service is temporarily unavailable, try again later.';

/**
 * PostgreSQL errors that mean the input's values cannot be stored or compared as sent (a NUL in
 * text, a character the encoding lacks, text that is not a number or uuid, a number out of range,
 * a value too long, nesting too deep for the server's stack): a bad request, never a 500. The
 * contract's patterns should refuse such input first; this is the last line of defence.
 */
const INPUT_SQLSTATES: Record<string, string> = {
  '22001': 'A value is too long.',
  '22003': 'A number is out of range.',
  '22008': 'A date or time is out of range.',
  '22021': 'The input holds characters that cannot be stored (such as NUL).',
  '22P02': 'A value does not have the expected form.',
  '22P05': 'The input holds characters that cannot be stored.',
  '54001': 'The input is nested too deeply.',
};

/**
 * Answers an error. `operation` is the one being called (its name and declared codes), when the
 * transport knows it; errors raised before routing (limiter, body reader) learn it from the path.
 */
export function sendError(req: Request, res: Response, error: unknown, operation?: Pick<ProcedureDefinition, 'name' | 'errors'>): void {
  // A body refused before it was read (its type, charset, encoding or length) is not read further:
  // the answer closes the connection after discarding what is still arriving (lingering-close.ts).
  if (res.headersSent) {
    req.log.error({ err: error }, 'error after the response started');
    res.destroy();
    return;
  }
  const known = toApiError(req, error);
  if (known) {
    const called = operation ?? findRoute(req.method, req.originalUrl.split('?')[0]!);
    const body = known.toBody(called?.errors ?? []);
    // Outside production an error answer is checked against the contract like a success answer
    // (procedure-call.ts checkAnswer): one that breaks it is our bug, answered 500.
    const broken = called && req.app.locals.validateResponses ? contractBreach(called.name, known.status, body) : undefined;
    if (broken) {
      req.log.error({ operation: called!.name, status: known.status, issues: broken }, 'error answer outside the contract');
      res.locals.errorCode = 'internal_error';
      res.status(500).json({ error: 'internal_error', requestId: req.id });
      return;
    }
    res.locals.errorCode = known.code;
    res.status(known.status).set(known.headers).json(body);
    return;
  }
  if (isBodyError(error) && error.type === 'entity.too.large') {
    sendPayloadTooLarge(req, res);
    return;
  }
  req.log.error({ err: error }, 'internal error');
  res.locals.errorCode = 'internal_error';
  res.status(500).json({ error: 'internal_error', requestId: req.id });
}

/** The issues of an error body its operation's declared response for that status refuses; undefined when it conforms or none is declared. */
function contractBreach(operation: string, status: number, body: unknown): unknown[] | undefined {
  const validate = outputValidator(operation, status);
  if (!validate || validate(body)) return undefined;
  return validate.errors ?? [];
}

/**
 * 413 payload_too_large (specification, "Errors"), in the shape of the other transport-level
 * refusals. When the body has not been read (its declared length was too big, or it was cut off
 * at the limit) the connection closes after the answer, once the rest has been read and discarded
 * within lingering-close.ts's limits, so that the client can read the answer.
 */
export function sendPayloadTooLarge(req: Request, res: Response): void {
  res.locals.errorCode = 'payload_too_large';
  res.status(413).json({ error: 'payload_too_large', message: `Request body exceeds ${MAX_BODY_BYTES} bytes.`, requestId: req.id });
}

/**
 * What body-parser's refusals (by `type`) say; its own messages name no fix. Anything else (json-body.ts's
 * refusals: not JSON, not UTF-8, too deep, poison keys) says its own message.
 */
const BODY_MESSAGES: Record<string, string> = {
  'entity.parse.failed': 'The request body is not valid JSON.',
  'charset.unsupported': 'The request body must be UTF-8 JSON: charset must be utf-8.',
  'encoding.unsupported': 'The request body may not be compressed: send it without Content-Encoding.',
  'request.aborted': 'The request body was cut short.',
  'request.size.invalid': 'The request body was cut short.',
};

function toApiError(req: Request, error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (error instanceof WireError) return badRequest([{ path: [], message: error.message }], error.message);
  if (isBodyError(error) && error.type !== 'entity.too.large' && error.status < 500) {
    const message = BODY_MESSAGES[error.type] ?? error.message;
    return badRequest([{ path: [], message }], message);
  }
  // Express's router answers a path parameter that is not valid percent-encoding with a URIError of status 400.
  if (error instanceof URIError) {
    const message = 'The path is not valid percent-encoding.';
    return badRequest([{ path: [], message }], message);
  }
  if (isDatabaseUnavailable(error)) {
    // Logged once, without the stack: an outage makes many of these.
    req.log.warn({ error: error instanceof Error ? error.message : String(error), code: (error as { code?: unknown }).code }, 'database unavailable');
    return new ApiError('SERVICE_UNAVAILABLE', { message: DATABASE_UNAVAILABLE });
  }
  const sqlstate = databaseCode(error);
  if (sqlstate !== undefined && sqlstate in INPUT_SQLSTATES) {
    // Logged: the input should have been refused earlier, by the contract or the handler.
    req.log.warn({ err: error, sqlstate }, 'database refused the input');
    const message = INPUT_SQLSTATES[sqlstate]!;
    return badRequest([{ path: [], message, params: { reason: 'database_refused', sqlstate } }], message);
  }
  return undefined;
}

/** The SQLSTATE of a postgres.js (or PGlite) error; undefined for anything else. */
function databaseCode(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, severity } = error as Error & { code?: unknown; severity?: unknown };
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  return error.name === 'PostgresError' || typeof severity === 'string' ? code : undefined;
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

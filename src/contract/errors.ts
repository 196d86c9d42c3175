/**
 * The one error catalogue. Handlers and the binding layer throw ApiError values; the transports
 * turn them into `{ defined, code, status, message, data? }` with the code's HTTP status.
 * Anything else thrown becomes the generic 500 `{ error: 'internal_error', requestId }`.
 * docs/errors.md lists the same table; a test keeps the two in step.
 */
import type { components } from '../../generated/types.ts';

export const errorCatalogue = {
  BAD_REQUEST: { status: 400, message: 'Input validation failed.' },
  UNAUTHORIZED: { status: 401, message: 'You must be signed in.' },
  FORBIDDEN: { status: 403, message: 'You do not have access to this resource.' },
  LIMIT_REACHED: { status: 403, message: 'Your plan limit is reached.' },
  NOT_FOUND: { status: 404, message: 'Not found.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed.' },
  CONFLICT: { status: 409, message: 'Conflict.' },
  PRECONDITION_FAILED: { status: 412, message: 'Precondition failed.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'Payload too large.' },
  TOO_MANY_REQUESTS: { status: 429, message: 'Too many requests, try again in a minute.' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'The service is temporarily unavailable, try again later.' },
  // A procedure of the contract whose handler is not built yet: an honest "not yet", not a crash.
  NOT_IMPLEMENTED: { status: 501, message: 'This operation is not available on this deployment yet.' },
  // Identity routes (/api/auth/*)
  INVALID_TOKEN: { status: 400, message: 'The link is invalid or has expired.' },
  INVALID_EMAIL_OR_PASSWORD: { status: 401, message: 'Invalid email or password.' },
  EMAIL_NOT_VERIFIED: { status: 403, message: 'Verify your email address before signing in.' },
  BANNED_USER: { status: 403, message: 'This account is banned.' },
  USER_ALREADY_EXISTS: { status: 422, message: 'An account with this email already exists.' },
} as const;

export type ErrorCode = keyof typeof errorCatalogue;

/** Retry-After of a 503: a few seconds, about what a database's restart or a dropped connection's replacement takes. */
export const SERVICE_RETRY_AFTER_SECONDS = 5;

export interface ValidationIssue {
  path: (string | number)[];
  message: string;
  params?: Record<string, unknown>;
}

/**
 * Data carried by the codes that declare some; the others carry none. LIMIT_REACHED's and
 * PAYLOAD_TOO_LARGE's are the contract's own types, so a limit kind is listed once
 * (openapi/components/schemas/LimitReachedError.yaml). BAD_REQUEST's issues are ValidationIssue
 * above: `params` carries whatever the validator reports, wider than the contract's example shape.
 */
export interface ErrorData {
  BAD_REQUEST: { issues: ValidationIssue[]; omittedIssues?: number };
  LIMIT_REACHED: components['schemas']['LimitReachedError']['data'];
  PAYLOAD_TOO_LARGE: components['schemas']['PayloadTooLargeError']['data'];
}

type ErrorOptions<C extends ErrorCode> = {
  message?: string;
  /** Extra response headers, e.g. Allow on a 405 or Retry-After on a 429. */
  headers?: Record<string, string>;
} & (C extends keyof ErrorData ? { data: ErrorData[C] } : { data?: never });

export class ApiError<C extends ErrorCode = ErrorCode> extends Error {
  override name = 'ApiError';
  readonly code: C;
  readonly status: number;
  readonly data: unknown;
  readonly headers: Record<string, string>;

  constructor(code: C, ...[options]: C extends keyof ErrorData ? [ErrorOptions<C>] : [ErrorOptions<C>?]) {
    super(options?.message ?? errorCatalogue[code].message);
    this.code = code;
    this.status = errorCatalogue[code].status;
    this.data = options?.data;
    this.headers = options?.headers ?? {};
    // A dependency that did not answer (the database, the storage, the AI service) is worth asking
    // again soon, and the contract declares Retry-After on every 503.
    if (code === 'SERVICE_UNAVAILABLE' && !('Retry-After' in this.headers)) this.headers = { ...this.headers, 'Retry-After': String(SERVICE_RETRY_AFTER_SECONDS) };
  }

  /** The wire body; `defined` tells whether the procedure declares this code. */
  toBody(declared: readonly string[] = []): ApiErrorBody {
    return {
      defined: declared.includes(this.code),
      code: this.code,
      status: this.status,
      message: this.message,
      ...(this.data === undefined ? {} : { data: this.data }),
    };
  }
}

export interface ApiErrorBody {
  defined: boolean;
  code: string;
  status: number;
  message: string;
  data?: unknown;
}

/**
 * The most issues one BAD_REQUEST lists (the contract's `maxItems`): an input of 10,000 wrong
 * array items would otherwise be answered with 10,000 issues, an answer a hundred times its request.
 */
export const MAX_ISSUES = 20;

/** A BAD_REQUEST listing the first MAX_ISSUES of `issues`; the rest are counted in `data.omittedIssues` and the message. */
export function badRequest(issues: ValidationIssue[], message: string = errorCatalogue.BAD_REQUEST.message): ApiError<'BAD_REQUEST'> {
  if (issues.length <= MAX_ISSUES) return new ApiError('BAD_REQUEST', { message, data: { issues } });
  const omittedIssues = issues.length - MAX_ISSUES;
  return new ApiError('BAD_REQUEST', {
    message: `${message} ${omittedIssues} more issues are not listed (${issues.length} in all).`,
    data: { issues: issues.slice(0, MAX_ISSUES), omittedIssues },
  });
}

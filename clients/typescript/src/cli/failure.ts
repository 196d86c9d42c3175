/**
 * Every way a command fails, reduced to one report on stderr (code, message, request id) and one
 * exit code from exit-codes.ts. With --json the report is one JSON document on stderr instead,
 * `{ "error": { code, status, message, requestId, data } }`, so scripts can read it too.
 */
import { ApiClientError } from '../index.ts';
import { CliError, ExitCode, type ExitCodeValue } from './exit-codes.ts';

export interface Failure {
  exitCode: ExitCodeValue;
  code: string;
  message: string;
  /** The HTTP status of the service's answer; absent when there was none. */
  status?: number;
  requestId?: string;
  data?: unknown;
  hint?: string;
}

/** Error codes of Node's network stack that mean "the service could not be reached". */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** What to do next, for the answers a person meets on a first run. */
const HINTS: Readonly<Record<string, string>> = {
  USER_ALREADY_EXISTS: 'An account with this email address exists: sign in with `workspace-api login --email <email>`.',
  EMAIL_NOT_VERIFIED: 'Open the link in the verification email first (`workspace-api signup` sent it), then sign in again.',
  TOO_MANY_REQUESTS: "Try again later: the organization's queue of jobs is full, or too many requests came from this address.",
};

export function describeFailure(error: unknown, url: string | undefined): Failure {
  if (error instanceof CliError) {
    return { exitCode: error.exitCode, code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) };
  }
  if (error instanceof ApiClientError) {
    if (error.status === 0) return networkFailure(error.cause ?? error, url);
    // A refused token means "sign in"; a refused password at login (INVALID_EMAIL_OR_PASSWORD) is the service's answer.
    const refusedToken = error.status === 401 && error.code === 'UNAUTHORIZED';
    const failure: Failure = {
      exitCode: refusedToken ? ExitCode.notSignedIn : ExitCode.apiError,
      code: error.code,
      message: error.message,
      status: error.status,
      ...(error.requestId ? { requestId: error.requestId } : {}),
      ...(error.data === undefined ? {} : { data: error.data }),
    };
    if (refusedToken) failure.hint = 'Sign in with `workspace-api login`, or pass a valid token (--token or WORKSPACE_API_TOKEN).';
    else if (HINTS[error.code]) failure.hint = HINTS[error.code];
    return failure;
  }
  if (networkCode(error)) return networkFailure(error, url);
  // A fault of the tool itself: say what it was, with the stack for a bug report.
  const unexpected = error instanceof Error ? error : new Error(String(error));
  return { exitCode: ExitCode.apiError, code: 'UNEXPECTED', message: unexpected.stack ?? unexpected.message };
}

function networkFailure(error: unknown, url: string | undefined): Failure {
  const reason = networkCode(error) ?? deepestMessage(error);
  return { exitCode: ExitCode.network, code: 'NETWORK_ERROR', message: `Cannot reach ${url ?? 'the service'} (${reason}).`, hint: 'Check --url / WORKSPACE_API_URL and that the service is running.' };
}

/** The network error code in `error` or its causes (fetch wraps the socket's error in `cause`). */
function networkCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && typeof current === 'object' && depth < 5; current = (current as { cause?: unknown }).cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
    if ((current as Error).name === 'TimeoutError') return 'timeout';
  }
  return undefined;
}

/** fetch says only "fetch failed"; the reason is in its innermost cause ("bad port", "getaddrinfo ENOTFOUND x"). */
function deepestMessage(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) message = current.message;
  return message;
}

export function reportFailure(failure: Failure, json: boolean, stderr: NodeJS.WritableStream = process.stderr): void {
  if (json) {
    const { exitCode, hint: _hint, ...error } = failure;
    stderr.write(`${JSON.stringify({ error: { ...error, exitCode } })}\n`);
    return;
  }
  const status = failure.status === undefined ? '' : ` (HTTP ${failure.status})`;
  const lines = [`Error ${failure.code}${status}: ${failure.message}`];
  const listed = issues(failure.data);
  for (const issue of listed) lines.push(`  - ${issue}`);
  if (listed.length === 0 && failure.data !== undefined && failure.data !== null) lines.push(`Details: ${JSON.stringify(failure.data)}`);
  if (failure.requestId) lines.push(`Request id: ${failure.requestId}`);
  if (failure.hint) lines.push(failure.hint);
  stderr.write(`${lines.join('\n')}\n`);
}

/** A BAD_REQUEST's `data.issues`, one readable line each (`slug: must match pattern ...`). */
function issues(data: unknown): string[] {
  const list = (data as { issues?: unknown } | undefined)?.issues;
  if (!Array.isArray(list)) return [];
  return list.map((issue: { path?: unknown; message?: unknown }) => {
    const path = Array.isArray(issue.path) && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
    const message = issue.message === undefined || typeof issue.message === 'string' ? (issue.message ?? '') : JSON.stringify(issue.message);
    return `${path}${message}`;
  });
}

/**
 * Reading request bodies and writing JSON answers for the AI service's plain node:http server.
 * Errors use OpenAI's shape, `{ error: { message, type } }`, so OpenAI-compatible clients report
 * them as they would a provider's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export type ErrorType = 'invalid_request_error' | 'server_error';

/** A failure with the status and message the caller should see; anything else answers a plain 500. */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly status: number;
  readonly type: ErrorType;
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, options: { headers?: Record<string, string>; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.status = status;
    this.type = status >= 500 ? 'server_error' : 'invalid_request_error';
    this.headers = options.headers ?? {};
  }
}

/** The whole body, or a 413 once it passes `limit` bytes; a declared Content-Length over it is refused unread. */
export async function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => new HttpError(413, `The request body is larger than ${limit} bytes.`);
  if (Number(request.headers['content-length'] ?? 0) > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/** The body parsed as JSON, or a 400 naming the problem. */
export async function readJson(request: IncomingMessage, limit: number): Promise<unknown> {
  const body = await readBody(request, limit);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new HttpError(400, 'The request body is not valid JSON.');
  }
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  response.end(text);
}

export function sendError(response: ServerResponse, error: HttpError): void {
  sendJson(response, error.status, { error: { message: error.message, type: error.type } }, error.headers);
}

/** The status of work dropped because its caller closed the connection (nginx's 499): nobody reads the answer. */
export const CALLER_GONE = 499;

/**
 * A signal that aborts when the caller goes away before its answer is written: its timeout or
 * abort closes the connection. The response's 'close' also comes after a normal answer, so only a
 * close before `writableFinished` counts (the request's 'close' is no use: since Node 16 it comes
 * as soon as the body has been read).
 */
export function callerSignal(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) controller.abort(new HttpError(CALLER_GONE, 'The caller went away before the answer.'));
  });
  return controller.signal;
}

/** X-Embedding-Purpose: `query` (a search) or `document` (chunks to index); a 400 when it is anything else. */
export function purposeOf(request: IncomingMessage): 'query' | 'document' | undefined {
  const value = request.headers['x-embedding-purpose'];
  if (value === undefined) return undefined;
  if (value !== 'query' && value !== 'document') throw new HttpError(400, 'X-Embedding-Purpose must be query or document.');
  return value;
}

/**
 * Whose turn a request takes in the queues (fair-queue.ts): X-Payer-Id, whoever pays for the work
 * (the API sends it: organizations/payer.ts), else X-Organization-Id (an API of an earlier release,
 * or another caller that groups by its own key); a 400 when malformed.
 */
export function turnOf(request: IncomingMessage): string | undefined {
  return turnHeader(request, 'x-payer-id', 'X-Payer-Id') ?? turnHeader(request, 'x-organization-id', 'X-Organization-Id');
}

function turnHeader(request: IncomingMessage, name: string, label: string): string | undefined {
  const value = request.headers[name];
  if (value === undefined) return undefined;
  // Ids are short; anything short and printable is accepted so other callers can group too.
  if (typeof value !== 'string' || !/^[\x21-\x7e]{1,128}$/.test(value)) {
    throw new HttpError(400, `${label} must be 1 to 128 printable characters without spaces.`);
  }
  return value;
}

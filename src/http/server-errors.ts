/**
 * The answers Node's HTTP server gives by itself, before any request reaches the app, given in the
 * transport-level error shape `{ error, message, requestId }` with an `X-Request-Id` and the
 * headers every response carries (security-headers.ts). The id follows request-id.ts's rule
 * (specification, rule 5): the client's own well-formed X-Request-Id when the request's headers
 * were parsed (an Expect refused, a body that turned out malformed or late), else a fresh UUID:
 *
 * - `clientError`: bytes that are not an HTTP/1.1 request (a malformed Content-Length, a bad
 *   request line), a request line and headers over `maxHeaderSize` (HPE_HEADER_OVERFLOW, 431),
 *   or a request not received in time (408). Node would write a bare status line. There is no
 *   request, so this writes a complete raw response with `Connection: close` and closes the
 *   connection, as Node's own answer does, but with a lingering close (lingering-close.ts).
 * - `checkExpectation`: an `Expect` other than `100-continue` (RFC 9110 §10.1.1), 417, where Node
 *   would answer with an empty body. A body sent anyway is discarded before the connection
 *   closes (lingering-close.ts), as after the app's own early answers.
 */
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../logger.ts';
import { lingerAfterRefusal, lingerOnEarlyAnswer } from './lingering-close.ts';
import { requestIdFor } from './request-id.ts';
import { CONTENT_SECURITY_POLICY } from './security-headers.ts';

interface Refusal {
  status: number;
  error: string;
  message: string;
}

/** By Node's error code (llhttp's `HPE_*`); the status is the one Node itself answers. */
const REFUSALS: Record<string, Refusal> = {
  HPE_HEADER_OVERFLOW: { status: 431, error: 'headers_too_large', message: 'The request line and headers are too large.' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, error: 'payload_too_large', message: 'The chunk extensions of the request body are too large.' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, error: 'request_timeout', message: 'The request was not received in time.' },
  HPE_INVALID_CONTENT_LENGTH: { status: 400, error: 'bad_request', message: 'The Content-Length header is not valid.' },
  HPE_UNEXPECTED_CONTENT_LENGTH: { status: 400, error: 'bad_request', message: 'Content-Length and Transfer-Encoding may not be sent together.' },
  HPE_INVALID_TRANSFER_ENCODING: { status: 400, error: 'bad_request', message: 'The Transfer-Encoding header is not valid.' },
  HPE_INVALID_CHUNK_SIZE: { status: 400, error: 'bad_request', message: 'The chunked request body is not valid.' },
};
const MALFORMED: Refusal = { status: 400, error: 'bad_request', message: 'The request is not valid HTTP/1.1.' };
const EXPECTATION_FAILED: Refusal = { status: 417, error: 'expectation_failed', message: 'The only expectation supported is "Expect: 100-continue".' };

/** Headers of every such answer besides the body's. */
function headers(requestId: string, body: string): Record<string, string> {
  return {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'X-Request-Id': requestId,
    'Content-Security-Policy': CONTENT_SECURITY_POLICY,
    'Cache-Control': 'private, no-store',
    'X-Content-Type-Options': 'nosniff',
    Connection: 'close',
  };
}

/**
 * The request whose headers the connection's parser has read and whose body it was reading when
 * it failed; none when the failure is in a request line or headers. The parser keeps the last
 * request after it completed (keep-alive): a complete one is an earlier request, not the failed one.
 */
function parsedRequest(socket: Socket): IncomingMessage | undefined {
  const incoming = (socket as Socket & { parser?: { incoming?: IncomingMessage | null } | null }).parser?.incoming;
  return incoming && !incoming.complete ? incoming : undefined;
}

/** Answers Node's own refusals on `server` in the service's shape; returns the server. */
export function answerServerErrors(server: Server, logger: Logger): Server {
  // Connections answered here and lingering: the parser reports each further chunk it drops again.
  const lingering = new WeakMap<Socket, () => void>();
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    const discarded = lingering.get(socket);
    if (discarded && error.code !== 'ECONNRESET') {
      discarded();
      return;
    }
    // A reset connection, or one already answered.
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    // A response of an earlier request on this connection has started: bytes written now would
    // land inside it (the rule of Node's own answer, _http_server.js socketOnError).
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const refusal = (error.code && REFUSALS[error.code]) || MALFORMED;
    const requestId = requestIdFor(parsedRequest(socket)?.headers['x-request-id']);
    const body = JSON.stringify({ error: refusal.error, message: refusal.message, requestId });
    const head = Object.entries(headers(requestId, body))
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(`HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\n${head}\r\n${body}`);
    // Then a FIN, and what the client is still sending is read and dropped (within bounds) before
    // the connection closes, so that the client can read the answer (lingering-close.ts).
    lingering.set(socket, lingerAfterRefusal(socket));
    logger.warn({ requestId, status: refusal.status, code: refusal.error, parserCode: error.code, ip: socket.remoteAddress }, 'request');
  });

  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const requestId = requestIdFor(req.headers['x-request-id']);
    const body = JSON.stringify({ error: EXPECTATION_FAILED.error, message: EXPECTATION_FAILED.message, requestId });
    // The body, if any, is left unread: the connection closes after the answer and a lingering close.
    lingerOnEarlyAnswer(req, res);
    res.writeHead(EXPECTATION_FAILED.status, headers(requestId, body)).end(body);
    logger.warn({ requestId, method: req.method, path: req.url?.split('?')[0], status: 417, code: EXPECTATION_FAILED.error, ip: req.socket.remoteAddress }, 'request');
  });
  return server;
}

/**
 * A bare HTTP/1.1 client over a TCP socket, for what fetch will not send or cannot observe: bad
 * percent-escapes as written, a Content-Length without its body, a chunked body that never ends,
 * and whether the server closed the connection.
 */
import { connect } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (it will read no more of the request). */
  closed: boolean;
  /** Body bytes the client managed to write before it stopped or the connection closed. */
  sent: number;
}

export interface RawRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  /** Sent right after the head. */
  body?: Buffer | string;
  /** Keep sending chunks of this many bytes (chunked framing) until an answer arrives or `maxBytes` went out. */
  stream?: { chunkBytes: number; maxBytes: number };
}

/** `settleMs`: how long to wait after the answer to see whether the server closes the connection. */
export function rawRequest(origin: string, request: RawRequest, timeoutMs = 10_000, settleMs = 200): Promise<RawAnswer> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    let sent = 0;
    let answered = false;
    let closed = false;
    const timer = setTimeout(() => finish(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);

    function parse(): Omit<RawAnswer, 'closed' | 'sent'> | undefined {
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const [statusLine = '', ...lines] = received.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const rest = received.subarray(end + 4);
      let body: Buffer;
      if (headers['transfer-encoding'] === 'chunked') {
        const chunks: Buffer[] = [];
        let at = 0;
        for (;;) {
          const lineEnd = rest.indexOf('\r\n', at);
          if (lineEnd < 0) return undefined;
          const size = parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16);
          if (size === 0) break;
          if (rest.length < lineEnd + 2 + size) return undefined;
          chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
          at = lineEnd + 4 + size;
        }
        body = Buffer.concat(chunks);
      } else {
        const length = Number(headers['content-length'] ?? 0);
        if (rest.length < length) return undefined;
        body = rest.subarray(0, length);
      }
      return { status: Number(statusLine.split(' ')[1]), headers, body: body.toString('utf8') };
    }

    let answer: Omit<RawAnswer, 'closed' | 'sent'> | undefined;
    function finish(error?: Error) {
      if (answered) return;
      if (!error && !answer) return;
      answered = true;
      clearTimeout(timer);
      // Give the server a moment to close, so `closed` tells whether it meant to.
      setTimeout(
        () => {
          socket.destroy();
          if (error && !answer) reject(error);
          else resolve({ ...answer!, closed, sent });
        },
        error ? 0 : settleMs,
      );
    }

    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      answer ??= parse();
      if (answer) finish();
    });
    socket.on('close', () => {
      closed = true;
      answer ??= parse();
      finish(answer ? undefined : new Error(`connection closed without an answer after ${sent} body bytes`));
    });
    socket.on('end', () => {
      closed = true;
    });
    socket.on('error', () => {
      // ECONNRESET/EPIPE while still writing: the server stopped reading; 'close' follows.
    });

    // A failure while writing ends the request with that error instead of an unhandled rejection.
    socket.on('connect', () => {
      writeRequest().catch((error: Error) => finish(error));
    });
    async function writeRequest() {
      const headers = { host: `${hostname}:${port}`, ...request.headers };
      const head = `${request.method} ${request.path} HTTP/1.1\r\n${Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}`)
        .join('\r\n')}\r\n\r\n`;
      socket.write(head, 'latin1');
      if (request.body !== undefined) {
        socket.write(request.body);
        sent += Buffer.byteLength(request.body);
      }
      if (request.stream) {
        const chunk = Buffer.alloc(request.stream.chunkBytes, 0x20);
        const frame = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]);
        while (!answer && !closed && !socket.destroyed && sent < request.stream.maxBytes) {
          const flushed = socket.write(frame);
          sent += chunk.length;
          if (!flushed) {
            await new Promise<void>((resume) => {
              const done = () => {
                socket.off('drain', done);
                socket.off('close', done);
                resume();
              };
              socket.on('drain', done);
              socket.on('close', done);
            });
          }
        }
      }
    }
  });
}

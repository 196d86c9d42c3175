/**
 * Lingering close, as nginx's `lingering_close` does it: an answer sent before the request's body
 * was read (a 413 on the declared length, a 403, 404 or 429 before the body reader, a refused
 * upload PUT, a 417, a body Node's parser refuses) closes the connection, but only after reading
 * and discarding what the client is still sending, within LINGER_LIMITS. Closing at once, with
 * unread bytes in the kernel's receive buffer, makes the kernel answer them with a reset (RFC 1122
 * §4.2.2.13); a client still writing its body then fails with EPIPE or ECONNRESET and may never
 * read the answer (undici's fetch, on a 30 MiB body, did so three times in ten). RFC 9112 §9.6
 * asks for this staged close: half-close first, and keep reading until the client closes too.
 *
 * The one place for every route: app.ts installs lingeringClose() first; server-errors.ts uses
 * lingerOnEarlyAnswer for the 417 Node answers before the app, and lingerAfterRefusal for what
 * Node's parser refuses.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestHandler } from 'express';

export interface LingerLimits {
  /** Bytes discarded after the answer before the connection is cut anyway. */
  maxBytes: number;
  /** Time after the answer before the connection is cut anyway. */
  maxMs: number;
  /** Time without a byte from the client before the connection is cut. */
  idleMs: number;
}

/**
 * The edge lets bodies of up to 32 MB through on /uploads/* (specification, "Errors", rule 5), so
 * any body the service can be sent is read to its end; nginx's own lingering_time and
 * lingering_timeout are 30 s and 5 s.
 */
export const LINGER_LIMITS: LingerLimits = { maxBytes: 32 * 1024 * 1024, maxMs: 30_000, idleMs: 5_000 };

/**
 * A declared body up to this size that is still arriving when the answer goes out is read and
 * discarded by Node (req._dump) and the connection kept, as for any unread body: cheaper than a
 * new connection. Larger or chunked ones close (with a lingering close).
 */
export const DRAIN_BYTES = 64 * 1024;

const handled = Symbol('lingerOnEarlyAnswer');

/** Express middleware: every answer of the app lingers when it is sent before its request's body was read. */
export function lingeringClose(limits: LingerLimits = LINGER_LIMITS): RequestHandler {
  return (req, res, next) => {
    lingerOnEarlyAnswer(req, res, limits);
    next();
  };
}

/**
 * Arranges for `res`: if its head goes out while `req`'s body is still arriving (chunked, or declared
 * longer than DRAIN_BYTES), it says `Connection: close`; once it is sent, the connection half-closes,
 * discards the rest of the body (within `limits`) and closes when the client has closed its side or
 * the body has ended. A request whose body has arrived (or that has none) is not touched.
 */
export function lingerOnEarlyAnswer(req: IncomingMessage, res: ServerResponse, limits: LingerLimits = LINGER_LIMITS): void {
  const marked = res as ServerResponse & { [handled]?: true };
  if (marked[handled]) return;
  marked[handled] = true;

  // writeHead is where every head goes out (Node's implicit header calls it too): the last moment
  // to say the connection will close, which also tells clients such as curl to stop sending.
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: Parameters<typeof writeHead>) {
    if (!this.headersSent && bodyToLingerOn(req)) this.setHeader('Connection', 'close');
    return writeHead.apply(this, args);
  } as typeof writeHead;

  // Prepended: runs before Node's own 'finish' handler (lib/_http_server.js resOnFinish). That one
  // would drop the rest of the body uncounted (req._dump) and end a `Connection: close` answer's
  // connection with socket.destroySoon(): destroyed as soon as the answer is flushed. Instead the
  // body flows to a counter here (a resumed request is not dumped), and destroySoon only half-closes.
  res.prependOnceListener('finish', () => {
    const socket = req.socket;
    if (!bodyToLingerOn(req) || socket.destroyed) return;
    linger(socket, req, limits);
    const halfClose = function (this: Socket) {
      Reflect.deleteProperty(socket, 'destroySoon');
      if (socket.writable) socket.end();
    };
    socket.destroySoon = halfClose;
    // Not called for an answer that keeps the connection: the next answer on it must find Node's own.
    process.nextTick(() => {
      if (socket.destroySoon === halfClose) Reflect.deleteProperty(socket, 'destroySoon');
    });
  });
}

/**
 * Whether `req` has a body still arriving that is worth a lingering close: chunked, or declared
 * longer than DRAIN_BYTES. (`req.complete` alone does not say: an answer given at once, in the
 * 'request' event, comes before Node's parser has seen the end of even a GET.)
 */
function bodyToLingerOn(req: IncomingMessage): boolean {
  if (req.complete) return false;
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && !(/^\d{1,16}$/.test(length) && Number(length) <= DRAIN_BYTES);
}

/**
 * Discards what `req` still brings and closes `socket` once the client is done (its side closed, or
 * the body ended) or a limit is reached. The FIN after the answer is Node's call (destroySoon above).
 */
function linger(socket: Socket, req: IncomingMessage, limits: LingerLimits): void {
  const discard = (chunk: Buffer) => lingering.discarded(chunk.length);
  const lingering = watch(socket, limits, () => {
    req.off('data', discard);
    req.off('end', lingering.done);
  });
  req.on('data', discard);
  req.once('end', lingering.done);
  // Flowing even if a body reader paused it when it gave up; resumed now, Node does not dump it.
  req.resume();
}

/**
 * After a refusal written straight to `socket` because Node's parser failed (server-errors.ts):
 * half-closes it and lingers as above. The parser goes on reading and drops each further chunk,
 * reporting it again as a 'clientError': call the returned function on each report.
 */
export function lingerAfterRefusal(socket: Socket, limits: LingerLimits = LINGER_LIMITS): () => void {
  let counted = socket.bytesRead;
  const lingering = watch(socket, limits, () => {});
  socket.end();
  return () => {
    const read = socket.bytesRead;
    lingering.discarded(read - counted);
    counted = read;
  };
}

interface Lingering {
  /** Counts bytes read and dropped: past maxBytes the connection is cut, otherwise the idle timer restarts. */
  discarded(bytes: number): void;
  /** Nothing more can be left unread: close once the answer is flushed. */
  done(): void;
}

/** The bounds of a lingering close on `socket`: maxMs in all, idleMs between bytes, maxBytes, and the client's own close. */
function watch(socket: Socket, limits: LingerLimits, onStop: () => void): Lingering {
  let total = 0;
  // Past a limit: cut the connection, whatever the client has read by then.
  const cut = () => {
    stop();
    socket.destroy();
  };
  const done = () => {
    stop();
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  const deadline = setTimeout(cut, limits.maxMs).unref();
  const idle = setTimeout(cut, limits.idleMs).unref();
  function stop() {
    clearTimeout(deadline);
    clearTimeout(idle);
    socket.off('end', done);
    socket.off('close', stop);
    onStop();
  }
  // The client closed its side: it has read the answer, or never will.
  socket.once('end', done);
  socket.once('close', stop);
  return {
    discarded(bytes) {
      total += bytes;
      if (total > limits.maxBytes) cut();
      else idle.refresh();
    },
    done,
  };
}

/**
 * The one JSON body reader of /api/v1, /rpc and /api/auth: express.json (body-parser) does the
 * reading (up to the limit), the charset check (utf-*), the refusal of compressed bodies (a way
 * around the limit) and the parse. This adds only what it does not do. Every refusal goes to
 * error-handler.ts, which answers 400 (or 413); if the body is unread, the connection closes after
 * the answer and a lingering close (lingering-close.ts).
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import express, { type RequestHandler } from 'express';
import { MAX_BODY_BYTES } from './error-handler.ts';

/** Deepest nesting of arrays and objects a body may have; the contract's deepest input is far shallower. */
export const MAX_JSON_DEPTH = 64;

const JSON_TYPES = ['application/json', 'application/*+json'];

/** A refusal shaped like body-parser's own errors: error-handler.ts answers by `type`. */
class Refusal extends Error {
  type = 'entity.refused';
  status = 400;
}
const refusal = (status: number, type: string, message: string) => Object.assign(new Refusal(message), { status, type });
const tooLarge = () => refusal(413, 'entity.too.large', 'request entity too large');

export function jsonBody({ limit = MAX_BODY_BYTES }: { limit?: number } = {}): RequestHandler {
  const parse = express.json({
    type: JSON_TYPES,
    limit,
    inflate: false,
    // Any JSON value, as before: the transports say what is wrong with a body that is not an object.
    strict: false,
    reviver: refusePoisonKeys,
    // The raw bytes, before anything parses (the validators and the database recurse).
    verify: (req, _res, bytes, charset) => {
      if (charset !== 'utf-8') throw refusal(415, 'charset.unsupported', charset); // body-parser lets any utf-* through
      if (!isUtf8(bytes)) throw new Refusal('The request body is not valid UTF-8.');
      if (nestingDepth(bytes.toString(), MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw new Refusal(`The request body is nested more than ${MAX_JSON_DEPTH} levels deep.`);
      // Kept as received: a webhook signature covers these bytes, which no re-serialized parse reproduces.
      (req as express.Request).rawBody = bytes;
    },
  });
  return (req, res, next) => {
    // No body: req.body stays undefined (RPC takes that as empty input); express.json would make Content-Length: 0 into {}.
    if (!hasBody(req)) return next();
    // express.json skips other types, but a plain HTML form can send text/plain or urlencoded bodies
    // cross-site without a preflight: read as JSON, they could sign a victim in or act for them.
    if (!req.is(JSON_TYPES)) return next(new Refusal('The request body must be JSON, sent with Content-Type: application/json.'));

    // Past the limit, body-parser answers only once it has drained the whole body: never, for a
    // declared length the client waits to send, or a chunked body that keeps coming. So the 413 is
    // ours, at once (the connection closes after it, lingering-close.ts), and body-parser's late error is dropped.
    let settled = false;
    let received = 0;
    const count = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) settle(tooLarge());
    };
    const settle = (error?: unknown) => {
      if (settled) return;
      settled = true;
      req.off('data', count);
      // body-parser relabels what the reviver throws as entity.parse.failed ("not valid JSON"): undo that.
      if (error instanceof Refusal && error.type === 'entity.parse.failed') error.type = 'entity.refused';
      next(error);
    };
    parse(req, res, settle);
    if (settled) return; // refused before reading: charset, Content-Encoding
    if (Number(req.headers['content-length']) > limit) settle(tooLarge());
    else req.on('data', count);
  };
}

/** Whether a body follows the request's head: a chunked one, or a Content-Length above 0. */
export function hasBody(req: Pick<IncomingMessage, 'headers'>): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
}

/** How deep arrays and objects nest in JSON text: one loop, no recursion, strings skipped, stops once past `stopAbove`. */
export function nestingDepth(text: string, stopAbove = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: on to its closing quote, stepping over each backslash's escaped character.
      for (i += 1; i < text.length && text.charCodeAt(i) !== 0x22; i += 1) if (text.charCodeAt(i) === 0x5c) i += 1;
    } else if (c === 0x7b || c === 0x5b) {
      depth += 1;
      if (depth > stopAbove) return depth;
      deepest = Math.max(deepest, depth);
    } else if (c === 0x7d || c === 0x5d) {
      depth -= 1;
    }
  }
  return deepest;
}

/** `__proto__`, or `constructor` holding `prototype`, only serve to poison objects something later merges into. */
function refusePoisonKeys(key: string, value: unknown): unknown {
  if (key === '__proto__') throw new Refusal('The request body may not hold the key "__proto__".');
  if (key === 'constructor' && value !== null && typeof value === 'object' && Object.hasOwn(value, 'prototype')) {
    throw new Refusal('The request body may not hold "constructor.prototype".');
  }
  return value;
}

/**
 * The one JSON body reader of /api/v1, /rpc and /api/auth.
 *
 * - A body is JSON only when it says so: Content-Type `application/json` or `application/*+json`
 *   (a charset parameter, if any, must be utf-8). Any other body answers 400 unread. A plain HTML
 *   form can send text/plain or urlencoded bodies cross-site without a preflight; were those
 *   parsed as JSON, it could sign a victim in (into the attacker's account) or act for them.
 * - No body (no Content-Length, or 0, and no Transfer-Encoding) leaves `req.body` undefined: RPC
 *   takes that as an empty input, GETs have none.
 * - At most MAX_BODY_BYTES: a larger declared Content-Length answers 413 at once without reading;
 *   a chunked body that runs past the limit is cut off there. Either way the connection closes
 *   after the answer, so the rest is never read.
 * - Nesting deeper than MAX_JSON_DEPTH answers 400; it is counted in one pass over the text,
 *   without recursion, before anything parses it (the validators and the database recurse).
 * - A `__proto__` key, or a `constructor` holding `prototype`, answers 400: they only serve to
 *   poison objects that something later merges into.
 * - No Content-Encoding (a compressed body would be a way around the size limit); bytes must be
 *   UTF-8.
 */
import type { Request, RequestHandler, Response } from 'express';
import { badRequest } from '../contract/errors.ts';
import { MAX_BODY_BYTES, sendError, sendPayloadTooLarge } from './error-handler.ts';

/** Deepest nesting of arrays and objects a body may have; the contract's deepest input is far shallower. */
export const MAX_JSON_DEPTH = 64;

const JSON_TYPE = /^application\/(?:json|[a-z0-9!#$&^_.+-]+\+json)$/;

export function jsonBody(options: { limit?: number; maxDepth?: number } = {}): RequestHandler {
  const limit = options.limit ?? MAX_BODY_BYTES;
  const maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
  return (req, res, next) => {
    const declared = req.headers['content-length'];
    const chunked = req.headers['transfer-encoding'] !== undefined;
    if (!chunked && (declared === undefined || Number(declared) === 0)) {
      next();
      return;
    }
    const typeProblem = contentTypeProblem(req.headers['content-type']);
    if (typeProblem) {
      refuse(req, res, typeProblem);
      return;
    }
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (encoding !== undefined && encoding !== '' && encoding !== 'identity') {
      refuse(req, res, 'The request body may not be compressed: send it without Content-Encoding.');
      return;
    }
    if (!chunked && Number(declared) > limit) {
      sendPayloadTooLarge(req, res);
      return;
    }

    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const settle = () => {
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        settle();
        chunks.length = 0;
        req.pause();
        sendPayloadTooLarge(req, res);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      settle();
      const parsed = parseBody(Buffer.concat(chunks, received), maxDepth);
      if (!parsed.ok) {
        sendError(req, res, badRequest([{ path: [], message: parsed.message }], parsed.message));
        return;
      }
      req.body = parsed.value;
      next();
    };
    const onError = (error: Error) => {
      if (settled) return;
      settle();
      // The client went away mid-body: nobody is left to answer.
      req.log.info({ err: error, received }, 'request body aborted');
      if (!req.socket.destroyed && !res.headersSent) refuse(req, res, 'The request body was cut short.');
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  };
}

/** A 400 before (or instead of) reading the body: the connection closes, so the body is never read. */
function refuse(req: Request, res: Response, message: string): void {
  if (!req.complete) res.setHeader('Connection', 'close');
  sendError(req, res, badRequest([{ path: [], message }], message));
}

/** Why this Content-Type is not a JSON body's, or undefined when it is one. */
export function contentTypeProblem(header: string | undefined): string | undefined {
  const refused = 'The request body must be JSON, sent with Content-Type: application/json.';
  if (header === undefined) return refused;
  const [type = '', ...parameters] = header.split(';');
  if (!JSON_TYPE.test(type.trim().toLowerCase())) return refused;
  for (const parameter of parameters) {
    const [name = '', value = ''] = parameter.split('=');
    if (name.trim().toLowerCase() !== 'charset') continue;
    if (!/^"?utf-8"?$/i.test(value.trim())) return 'The request body must be UTF-8 JSON: charset must be utf-8.';
  }
  return undefined;
}

type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function parseBody(bytes: Uint8Array, maxDepth: number = MAX_JSON_DEPTH): Parsed {
  let text: string;
  try {
    // A leading byte order mark is dropped (ignoreBOM is false).
    text = utf8.decode(bytes);
  } catch {
    return { ok: false, message: 'The request body is not valid UTF-8.' };
  }
  if (text === '') return { ok: true, value: undefined };
  if (nestingDepth(text, maxDepth) > maxDepth) {
    return { ok: false, message: `The request body is nested more than ${maxDepth} levels deep.` };
  }
  try {
    // The reviver walks every key: only pay for it when a refused key could be there (also escaped).
    const value: unknown = /proto|\\u/.test(text) ? JSON.parse(text, refusePoisonKeys) : JSON.parse(text);
    return { ok: true, value };
  } catch (error) {
    if (error instanceof PoisonKey) return { ok: false, message: error.message };
    return { ok: false, message: 'The request body is not valid JSON.' };
  }
}

/**
 * How deep arrays and objects nest in JSON text, counted in one loop (strings skipped, escapes
 * honoured); stops counting once past `stopAbove`. Invalid JSON still gets a number: the parser
 * refuses it afterwards.
 */
export function nestingDepth(text: string, stopAbove: number = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i += 1; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      depth += 1;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (c === 0x7d || c === 0x5d) {
      depth -= 1;
    }
  }
  return deepest;
}

class PoisonKey extends Error {}

function refusePoisonKeys(this: unknown, key: string, value: unknown): unknown {
  if (key === '__proto__') throw new PoisonKey('The request body may not hold the key "__proto__".');
  if (key === 'constructor' && value !== null && typeof value === 'object' && Object.hasOwn(value, 'prototype')) {
    throw new PoisonKey('The request body may not hold "constructor.prototype".');
  }
  return value;
}

/**
 * The published documents declare every status and header the service really sends, so SDKs
 * generated from them (and the Prism mock) know them:
 * - 501 NOT_IMPLEMENTED on exactly the operations without a handler (a built one must drop it);
 * - 405 METHOD_NOT_ALLOWED with `Allow` on every operation (src/http/not-found.ts answers it on
 *   every declared path called with another method);
 * - `X-Request-Id` as an optional request header and on every response (src/http/request-id.ts);
 * - `Retry-After` on every 429; 403 on every write (the Origin rule, src/http/origin-check.ts);
 * - `set-auth-token` and the `session` Set-Cookie on every success of a non-public operation
 *   (src/http/session-middleware.ts renews a session on any request that carries one).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { authRoutes } from '../../generated/auth-routes.ts';
import { procedures } from '../../generated/procedures.ts';
import { identityHandlers as authHandlers, procedureHandlers as handlers, streamHandlers } from '../../src/composition/handlers.ts';
import { deref, readPublishedDocument, type Json } from '../support/openapi-document.ts';

const documents: Record<string, Json> = { 'openapi.json': readPublishedDocument('openapi.json'), 'auth-openapi.json': readPublishedDocument('auth-openapi.json') };
const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

interface Operation {
  document: string;
  doc: Json;
  name: string;
  method: string;
  op: Json;
}

// The procedures and identity routes. `x-transport` operations (the /uploads signed addresses) are
// served by the HTTP layer with their own bodies: test/unit/uploads-contract.test.ts covers them.
const operations: Operation[] = Object.entries(documents).flatMap(([document, doc]) =>
  Object.values<Json>(doc.paths).flatMap((item) =>
    METHODS.filter((method) => item[method] && item[method]['x-transport'] === undefined).map((method) => ({ document, doc, name: item[method].operationId as string, method, op: item[method] as Json })),
  ),
);
const byName = (list: Operation[]) => list.map((o) => [`${o.document} ${o.name}`, o] as const);

function headersOf(o: Operation, status: string): Json {
  return deref(o.doc, o.op.responses[status]).headers ?? {};
}

/** The `code` constants a response's JSON schema allows. */
function codesOf(o: Operation, status: string): string[] {
  const schema = deref(o.doc, deref(o.doc, o.op.responses[status]).content?.['application/json']?.schema ?? {});
  return (schema.oneOf ?? [schema]).map((variant: Json) => deref(o.doc, variant).properties?.code?.const).filter(Boolean);
}

describe('501 NOT_IMPLEMENTED is declared on exactly the operations without a handler', () => {
  const built = new Set([...Object.keys(handlers), ...Object.keys(streamHandlers), ...Object.keys(authHandlers)]);

  it('the route tables and the documents list the same operations', () => {
    expect(operations.map((o) => o.name).sort()).toEqual([...Object.keys(procedures), ...Object.keys(authRoutes)].sort());
  });

  it.each(byName(operations))('%s', (_name, o) => {
    const declared = '501' in o.op.responses;
    if (built.has(o.name)) {
      expect(declared, `${o.name} has a handler: remove its 501 from the contract`).toBe(false);
    } else {
      expect(declared, `${o.name} has no handler yet, so it answers 501: declare it`).toBe(true);
      expect(codesOf(o, '501')).toEqual(['NOT_IMPLEMENTED']);
      expect(deref(o.doc, o.op.responses['501']).description).toMatch(/removed when the procedure is built/);
      expect(headersOf(o, '501')).toHaveProperty('X-Request-Id');
    }
  });
});

describe('every operation declares the answers and headers of the HTTP layer', () => {
  it.each(byName(operations))('%s', (_name, o) => {
    // 405 with Allow, in the envelope.
    expect(o.op.responses).toHaveProperty('405');
    expect(codesOf(o, '405')).toEqual(['METHOD_NOT_ALLOWED']);
    expect(deref(o.doc, headersOf(o, '405').Allow ?? {})?.required).toBe(true);

    // X-Request-Id: an optional request header, and on every response.
    const parameters = (o.op.parameters ?? []).map((p: Json) => deref(o.doc, p));
    const requestId = parameters.find((p: Json) => p.in === 'header' && p.name === 'X-Request-Id');
    expect(requestId, 'X-Request-Id request header').toBeDefined();
    expect(requestId.required).toBe(false);
    expect(deref(o.doc, requestId.schema).pattern).toBe('^[A-Za-z0-9._:=+/-]{1,128}$');
    for (const status of Object.keys(o.op.responses)) {
      const headers = headersOf(o, status);
      expect(deref(o.doc, headers['X-Request-Id'] ?? {})?.required, `${status} X-Request-Id`).toBe(true);
      if (status === '429') expect(deref(o.doc, headers['Retry-After'] ?? {})?.required, '429 Retry-After').toBe(true);
    }

    // The Origin rule answers 403 to a write that carries a cookie without a trusted Origin.
    if (o.method !== 'get') expect(codesOf(o, '403'), 'a write declares the Origin rule 403').toContain('FORBIDDEN');

    // A request with a valid session may renew it, whatever the operation answers.
    if (o.op.security?.length !== 0 || o.op['x-access'] !== 'public') {
      for (const status of Object.keys(o.op.responses).filter((s) => /^[23]/.test(s))) {
        const headers = Object.fromEntries(Object.entries(headersOf(o, status)).map(([key, value]) => [key.toLowerCase(), value]));
        expect(headers, `${status} set-auth-token`).toHaveProperty('set-auth-token');
        expect(headers, `${status} Set-Cookie`).toHaveProperty('set-cookie');
      }
    }
  });
});

describe('the generated types expose the declared headers', () => {
  const types = readFileSync(new URL('../../generated/types.ts', import.meta.url), 'utf8');
  it('X-Request-Id as a request header of every procedure, and the response headers as components', () => {
    const transports = Object.values<Json>(documents['openapi.json']!.paths).flatMap((item) =>
      ['get', 'head', 'put', 'post', 'patch', 'delete'].filter((method) => item[method]?.['x-transport'] !== undefined),
    );
    expect(types.match(/"X-Request-Id"\?: components\["parameters"\]\["RequestIdHeader"\]/g)?.length).toBe(Object.keys(procedures).length + transports.length);
    for (const header of ['RequestId', 'RetryAfter', 'Allow', 'SetAuthToken', 'SetSessionCookie']) expect(types).toMatch(new RegExp(`components\\["headers"\\]\\["${header}"\\]`));
  });
});

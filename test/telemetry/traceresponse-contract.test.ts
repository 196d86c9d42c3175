/**
 * `traceresponse` (issue 41; src/http/request-span.ts) is declared wherever `X-Request-Id` is: on
 * every response of both published documents, the /uploads addresses included, through the one
 * component, optional (absent while tracing is off), its pattern the header's format. A new
 * response declared without it fails here, as one without X-Request-Id fails
 * test/unit/declared-statuses.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { deref, readPublishedDocument, type Json } from '../support/openapi-document.ts';

const METHODS = ['get', 'head', 'put', 'post', 'patch', 'delete'];

describe.each(['openapi.json', 'auth-openapi.json'] as const)('%s', (name) => {
  const doc = readPublishedDocument(name);
  const responses = Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).flatMap((method) =>
      Object.entries<Json>(item[method].responses).map(([status, response]) => ({ where: `${method.toUpperCase()} ${path} ${status}`, response: deref(doc, response) })),
    ),
  );

  it('declares traceresponse beside X-Request-Id on every response', () => {
    expect(responses.length).toBeGreaterThan(0);
    for (const { where, response } of responses) {
      const headers: Json = response.headers ?? {};
      expect(headers, where).toHaveProperty('X-Request-Id');
      const header = deref(doc, headers.traceresponse ?? {});
      expect(header.required, `${where} traceresponse`).toBe(false);
      expect(header.schema?.pattern, `${where} traceresponse`).toBe('^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');
    }
  });

  it('its example matches its pattern', () => {
    const header = Object.values<Json>(responses[0]!.response.headers)
      .map((h) => deref(doc, h))
      .find((h) => h.schema?.pattern?.startsWith('^00-'))!;
    expect(header.example).toMatch(new RegExp(header.schema.pattern));
  });
});

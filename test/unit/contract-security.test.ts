/**
 * Security and servers of the two published documents as SDK generators read them: the bearer
 * scheme comes before the cookie everywhere (generators pick the first), public operations say
 * `security: []`, auth.getSession says its session is optional, and the committed documents name
 * no deployment (the served copies add it: test/http/operational.test.ts).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

type Json = Record<string, any>;

const read = (name: string): Json => JSON.parse(readFileSync(new URL(`../../generated/${name}`, import.meta.url), 'utf8'));
const documents: Record<string, { doc: Json; base: string }> = {
  'openapi.json': { doc: read('openapi.json'), base: '/api/v1' },
  'auth-openapi.json': { doc: read('auth-openapi.json'), base: '/api/auth' },
};

function operations(doc: Json): [string, Json][] {
  return Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
    Object.entries<Json>(item)
      .filter(([method]) => ['get', 'put', 'post', 'patch', 'delete'].includes(method))
      .map(([method, op]): [string, Json] => [`${method.toUpperCase()} ${path}`, op]),
  );
}

const schemeOrder = (requirements: Json[]) => requirements.map((requirement) => Object.keys(requirement).join('+') || '{}');

describe.each(Object.entries(documents))('%s', (_name, { doc, base }) => {
  it('lists bearerAuth before sessionCookie in securitySchemes and in the global security', () => {
    expect(Object.keys(doc.components.securitySchemes)).toEqual(['bearerAuth', 'sessionCookie']);
    expect(schemeOrder(doc.security)).toEqual(['bearerAuth', 'sessionCookie']);
  });

  it('every operation-level security is [] (public) or bearer, cookie, then optionally anonymous', () => {
    for (const [where, op] of operations(doc)) {
      if (op.security === undefined) continue;
      const order = schemeOrder(op.security);
      expect([[], ['bearerAuth', 'sessionCookie'], ['bearerAuth', 'sessionCookie', '{}']], where).toContainEqual(order);
      if (op['x-access'] === 'public') expect(order.length === 0 || order.includes('{}'), `${where} is public`).toBe(true);
    }
  });

  it('public operations declare no required credentials; the others inherit bearer and cookie', () => {
    for (const [where, op] of operations(doc)) {
      if (op['x-access'] === 'public') expect(op.security, where).toBeDefined();
      else expect(op.security, where).toBeUndefined();
    }
  });

  it('the committed document names no deployment: one relative server', () => {
    expect(doc.servers.map((server: Json) => server.url)).toEqual([base]);
  });
});

it('auth.getSession takes a bearer token or the cookie, and no credentials at all', () => {
  const op = documents['auth-openapi.json']!.doc.paths['/get-session'].get;
  expect(op.security).toEqual([{ bearerAuth: [] }, { sessionCookie: [] }, {}]);
});

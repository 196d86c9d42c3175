/**
 * OPTIONS: a CORS preflight from a trusted origin is the CORS policy's (204 with the grant); any
 * other OPTIONS is a method no operation declares, answered as every undeclared method is (405
 * with Allow on a declared path, 404 elsewhere, the routes' own answer on /rpc and /uploads),
 * never Express's automatic `200 text/plain` Allow list.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authRoutes } from '../../generated/auth-routes.ts';
import { procedures } from '../../generated/procedures.ts';
import { allowedMethods } from '../../src/http/route-lookup.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const TRUSTED = 'https://app.example.com';

let server: TestServer;
beforeAll(async () => {
  // Limits high enough for one request per path and method; the limiters are not under test.
  server = await startTestServer({ env: { WEB_URL: TRUSTED, RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000' } });
});
afterAll(() => server?.close());

const concrete = (prefix: string, path: string) => `${prefix}${path.replace(/\{[^}]+\}/g, 'x_1')}`;
const paths = [
  ...new Set([
    ...Object.values(procedures).map((p) => concrete('/api/v1', p.path)),
    ...Object.values(authRoutes).map((r) => concrete('/api/auth', r.path)),
    '/healthz',
    '/readyz',
    '/metrics',
    '/api/v1/openapi.json',
    '/api/auth/openapi.json',
    '/api/auth/reference',
    '/nope',
    '/api/v1/nope',
    '/api/auth/nope',
    '/rpc/system/health',
    '/rpc/nope',
    '/uploads/org_a/doc_b',
  ]),
];

/** A method the path does not declare: what OPTIONS must be answered like. */
function undeclaredMethod(path: string): string {
  const declared = allowedMethods(path);
  return ['DELETE', 'PATCH', 'PUT', 'POST'].find((method) => !declared.includes(method))!;
}

async function answer(path: string, method: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.origin}${path}`, { method, headers });
  const text = await response.text();
  const type = response.headers.get('content-type') ?? '';
  const body = type.includes('json') && text ? JSON.parse(text) : text;
  return { status: response.status, type, allow: response.headers.get('allow'), requestId: response.headers.get('x-request-id'), body, headers: response.headers };
}

/** What does not depend on the method's name (a 405's message names it). */
function shape(a: Awaited<ReturnType<typeof answer>>) {
  const { message: _message, requestId: _requestId, ...rest } = typeof a.body === 'object' ? a.body : { text: a.body };
  return { status: a.status, type: a.type, allow: a.allow, body: rest };
}

describe('OPTIONS that is not a CORS preflight', () => {
  it.each(paths)('%s answers what an undeclared method answers there', async (path) => {
    const method = undeclaredMethod(path);
    const [options, other] = [await answer(path, 'OPTIONS'), await answer(path, method)];
    expect(shape(options), `OPTIONS vs ${method}`).toEqual(shape(other));
    expect(options.status).toBeGreaterThanOrEqual(400);
    expect(options.type).toMatch(/^application\/json/);
    expect(options.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('405 with the declared methods in Allow on a declared path, in the error envelope', async () => {
    const options = await answer('/api/v1/workspaces', 'OPTIONS');
    expect(options.status).toBe(405);
    expect(options.allow).toBe(allowedMethods('/api/v1/workspaces').join(', '));
    expect(options.body).toEqual({ defined: false, code: 'METHOD_NOT_ALLOWED', status: 405, message: 'OPTIONS is not allowed here.' });
  });

  it('never advertises HEAD on identity routes (they refuse it)', async () => {
    for (const route of Object.values(authRoutes).filter((r) => r.method === 'GET')) {
      const path = concrete('/api/auth', route.path);
      const options = await answer(path, 'OPTIONS');
      expect(options.allow, path).not.toMatch(/HEAD/);
      expect((await answer(path, 'HEAD')).status, path).toBe(405);
    }
  });

  it('404 in the envelope where no route is', async () => {
    const options = await answer('/nope', 'OPTIONS');
    expect(options.status).toBe(404);
    expect(options.body).toMatchObject({ defined: false, code: 'NOT_FOUND', message: 'No route for OPTIONS /nope.' });
  });

  it('with a trusted Origin but no Access-Control-Request-Method it is no preflight: no CORS grant, 405', async () => {
    const options = await answer('/api/v1/workspaces', 'OPTIONS', { origin: TRUSTED });
    expect(options.status).toBe(405);
    expect(options.headers.get('access-control-allow-methods')).toBeNull();
  });
});

describe('CORS preflights', () => {
  const preflight = { 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization' };

  it.each(['/api/v1/workspaces', '/api/auth/sign-in/email', '/rpc/workspaces/create', '/uploads/org_a/doc_b', '/nope'])('from a trusted origin, %s: 204 with the grant, as before', async (path) => {
    const options = await answer(path, 'OPTIONS', { origin: TRUSTED, ...preflight });
    expect(options.status).toBe(204);
    expect(options.body).toBe('');
    expect(options.headers.get('access-control-allow-origin')).toBe(TRUSTED);
    expect(options.headers.get('access-control-allow-credentials')).toBe('true');
    expect(options.headers.get('access-control-allow-methods')).toBe('GET,HEAD,POST,PUT,PATCH,DELETE');
    expect(options.headers.get('access-control-allow-headers')).toBe('Content-Type,Authorization,X-Request-Id,Last-Event-Id,Idempotency-Key');
    expect(options.headers.get('access-control-max-age')).toBe('600');
    expect(options.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('from another origin: no grant, answered like an undeclared method', async () => {
    const options = await answer('/api/v1/workspaces', 'OPTIONS', { origin: 'https://evil.example.com', ...preflight });
    expect(options.headers.get('access-control-allow-origin')).toBeNull();
    expect(options.status).toBe(405);
  });
});

/**
 * Bad bytes and bad shapes are 4xx, never 500: malformed percent-escapes, bodies that are not
 * JSON (or say they are not), too big, too deep or poisoned, and database refusals of the input's
 * text. Plus the login-CSRF rule of sign-in and sign-up.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionAuthenticator } from '../../src/auth/authenticate.ts';
import type { Database } from '../../src/db/connection.ts';
import { MAX_BODY_BYTES } from '../../src/http/error-handler.ts';
import { MAX_JSON_DEPTH, nestingDepth } from '../../src/http/json-body.ts';
import { createTestDatabase } from '../support/database.ts';
import { startTestServer, type TestResponse, type TestServer } from '../support/server.ts';
import { createUser, TEST_PASSWORD, type TestUser } from '../support/users.ts';
import { rawRequest } from './raw-client.ts';

let db: Database;
let server: TestServer;
let user: TestUser;
let authentications = 0;
/** What the overridden system.authConfig handler throws next (or does, given the database). */
let authConfigFails: (db: Database) => Promise<never> = async () => {
  throw new Error('unset');
};

beforeAll(async () => {
  db = await createTestDatabase();
  const authenticate = sessionAuthenticator(db.sql, () => new Date());
  server = await startTestServer({
    db,
    env: { TRUSTED_ORIGINS: 'https://partner.example.com', AUTH_RATE_LIMIT_PER_MINUTE: '1000', RATE_LIMIT_PER_MINUTE: '100000' },
    overrides: {
      authenticate: async (headers) => {
        authentications += 1;
        return authenticate(headers);
      },
      handlers: { 'system.authConfig': () => authConfigFails(db) },
    },
  });
  user = await createUser(db);
});
afterAll(async () => {
  await server?.close();
  await db?.close();
});

function expectErrorShape(body: any, code: string, status: number) {
  expect(body).toMatchObject({ code, status, message: expect.any(String) });
  expect(typeof body.defined).toBe('boolean');
}

describe('malformed percent-encoding in the path', () => {
  const paths = [
    ['GET', '/api/v1/documents/%ff%fe'],
    ['DELETE', '/api/v1/documents/%ff'],
    ['POST', '/rpc/documents/%ff'],
    ['POST', '/rpc/documents/get%'],
    ['PUT', '/uploads/%ff/x?expires=1&size=1&signature=x'],
    ['GET', '/uploads/org_1/%E0%A4%A'],
    ['POST', '/api/auth/sign-in%ff'],
    ['GET', '/api/auth/organization/list-members%c0%af'],
    ['GET', '/nowhere/%'],
  ] as const;
  for (const [method, path] of paths) {
    it(`${method} ${path} answers 400 BAD_REQUEST before any session lookup`, async () => {
      const before = authentications;
      const answer = await rawRequest(server.origin, { method, path, headers: { authorization: `Bearer ${user.token}`, 'content-length': '0' } });
      expect(answer.status).toBe(400);
      expectErrorShape(JSON.parse(answer.body), 'BAD_REQUEST', 400);
      expect(authentications).toBe(before);
    });
  }

  it('a well-formed escape (even of NUL) passes on to the route', async () => {
    const response = await fetch(`${server.origin}/api/v1/documents/%00`, { headers: user.headers });
    expect(response.status).toBeLessThan(500);
  });
});

describe('database refusals of the input are 400, not 500', () => {
  it('a NUL reaching PostgreSQL (22021)', async () => {
    authConfigFails = async (database) => {
      await database.sql`select ${'a\u0000b'}::text as value`;
      throw new Error('the database took a NUL');
    };
    const response = await server.fetch('/api/v1/auth-config');
    expect(response.status).toBe(400);
    const body = await response.json();
    expectErrorShape(body, 'BAD_REQUEST', 400);
    expect(body.data.issues[0].params).toMatchObject({ reason: 'database_refused' });
  });

  for (const code of ['22021', '22P05', '22P02', '54001', '22001', '22003']) {
    it(`SQLSTATE ${code}`, async () => {
      authConfigFails = async () => {
        throw Object.assign(new Error(`refused ${code}`), { name: 'PostgresError', code, severity: 'ERROR' });
      };
      const response = await server.fetch('/api/v1/auth-config');
      expect(response.status).toBe(400);
      expect((await response.json()).data.issues[0].params).toEqual({ reason: 'database_refused', sqlstate: code });
    });
  }

  it('other database errors stay 500, and so do look-alikes that are not database errors', async () => {
    for (const error of [Object.assign(new Error('duplicate'), { name: 'PostgresError', code: '23505', severity: 'ERROR' }), Object.assign(new Error('not from postgres'), { code: '22021' })]) {
      authConfigFails = async () => {
        throw error;
      };
      const response = await server.fetch('/api/v1/auth-config');
      expect(response.status).toBe(500);
      expect(await response.json()).toMatchObject({ error: 'internal_error' });
    }
  });
});

const post = (path: string, body: string | Buffer, headers: Record<string, string>) => fetch(`${server.origin}${path}`, { method: 'POST', body, headers }) as Promise<TestResponse>;
const signInBody = () => JSON.stringify({ email: user.email, password: TEST_PASSWORD });

describe('bodies are JSON only when they say so', () => {
  const refused = [
    ['text/plain (a cross-site form)', { 'content-type': 'text/plain' }],
    ['urlencoded (a cross-site form)', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['multipart', { 'content-type': 'multipart/form-data; boundary=x' }],
    ['no content type at all', {}],
    ['json in another charset', { 'content-type': 'application/json; charset=iso-8859-1' }],
    ['application/jsonx', { 'content-type': 'application/jsonx' }],
  ] as const;
  for (const [name, headers] of refused) {
    it(`refuses ${name} on sign-in, RPC and REST with 400, signing nobody in`, async () => {
      const signIn = await post('/api/auth/sign-in/email', signInBody(), headers);
      expect(signIn.status).toBe(400);
      expect(signIn.headers.get('set-cookie')).toBeNull();
      expect(signIn.headers.get('set-auth-token')).toBeNull();
      expectErrorShape(await signIn.json(), 'BAD_REQUEST', 400);
      const rpc = await post('/rpc/system/health', '{"json":{}}', headers);
      expect(rpc.status).toBe(400);
      const rest = await post('/api/v1/workspaces', '{}', { ...headers, ...user.headers });
      expect(rest.status).toBe(400);
      expectErrorShape(await rest.json(), 'BAD_REQUEST', 400);
    });
  }

  const accepted = ['application/json', 'application/json; charset=UTF-8', 'Application/JSON;charset="utf-8"', 'application/vnd.api+json'];
  for (const type of accepted) {
    it(`accepts ${type}`, async () => {
      expect((await post('/api/auth/sign-in/email', signInBody(), { 'content-type': type })).status).toBe(200);
      expect((await post('/rpc/system/health', '{"json":{}}', { 'content-type': type })).status).toBe(200);
    });
  }

  it('an empty body needs no content type', async () => {
    expect((await fetch(`${server.origin}/rpc/system/health`, { method: 'POST' })).status).toBe(200);
    expect((await post('/rpc/system/health', '', { 'content-type': 'text/plain' })).status).toBe(200);
    expect((await fetch(`${server.origin}/api/auth/sign-out`, { method: 'POST', headers: { 'content-type': 'text/plain', ...(await createUser(db)).headers } })).status).toBe(200);
  });

  it('refuses bytes that are not UTF-8, and compressed bodies', async () => {
    const latin1 = Buffer.from('{"json":{"name":"caf\xe9"}}', 'latin1');
    const bad = await post('/rpc/system/health', latin1, { 'content-type': 'application/json' });
    expect(bad.status).toBe(400);
    expect((await bad.json()).message).toMatch(/UTF-8/);
    const gzipped = await post('/rpc/system/health', gzipSync('{"json":{}}'), { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    expect(gzipped.status).toBe(400);
    const bom = await post('/rpc/system/health', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"json":{}}')]), { 'content-type': 'application/json' });
    expect(bom.status).toBe(200);
  });

  it('refuses __proto__ keys and constructor.prototype, also when escaped', async () => {
    const bodies = [
      '{"__proto__":{"role":"admin"},"name":"x","slug":"xx"}',
      '{"name":"x","slug":"xx","nested":{"a":[{"__proto__":{}}]}}',
      '{"\\u005f_proto__":{"role":"admin"}}',
      '{"constructor":{"prototype":{"role":"admin"}}}',
    ];
    for (const body of bodies) {
      const response = await post('/api/auth/organization/create', body, { 'content-type': 'application/json', ...user.headers });
      expect(response.status, body).toBe(400);
      expect((await response.json()).message, body).toMatch(/__proto__|constructor/);
    }
    // A bare `constructor` or `prototype` key is only an unknown field.
    const plain = await post('/api/auth/organization/create', '{"name":"x","slug":"xx","prototype":1,"constructor":"y"}', { 'content-type': 'application/json', ...user.headers });
    expect(plain.status).toBe(400);
    expect((await plain.json()).message).not.toMatch(/__proto__|constructor/);
  });
});

describe('nesting is bounded', () => {
  const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

  it(`refuses 3000 levels in organization metadata with 400 naming the bound (${MAX_JSON_DEPTH})`, async () => {
    const body = `{"name":"Deep","slug":"deep-org","metadata":${deep(3000)}}`;
    const response = await post('/api/auth/organization/create', body, { 'content-type': 'application/json', ...user.headers });
    expect(response.status).toBe(400);
    const answer = await response.json();
    expectErrorShape(answer, 'BAD_REQUEST', 400);
    expect(answer.message).toContain(`more than ${MAX_JSON_DEPTH} levels`);
  });

  it('refuses deep arrays on RPC and REST too', async () => {
    const arrays = `{"json":{"organizationId":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`;
    expect((await post('/rpc/workspaces/list', arrays, { 'content-type': 'application/json', ...user.headers })).status).toBe(400);
    expect((await post('/api/v1/workspaces', deep(5000), { 'content-type': 'application/json', ...user.headers })).status).toBe(400);
  });

  it('counts brackets in strings as text, and escapes as escapes', () => {
    expect(nestingDepth('{"a":"[[[[{{{{"}')).toBe(1);
    expect(nestingDepth('{"a":"\\"[[[["}')).toBe(1);
    expect(nestingDepth('{"a":"\\\\","b":[[1]]}')).toBe(3);
    expect(nestingDepth(deep(MAX_JSON_DEPTH))).toBe(MAX_JSON_DEPTH);
    expect(nestingDepth('['.repeat(1_000_000), 64)).toBe(65); // stops early
  });

  it(`reads ${MAX_JSON_DEPTH} levels, refuses one more`, async () => {
    // The RPC body's top level is one level; `pad` (ignored) holds the rest.
    const body = (levels: number) => `{"json":{},"pad":${deep(levels - 1)}}`;
    expect((await post('/rpc/system/health', body(MAX_JSON_DEPTH), { 'content-type': 'application/json' })).status).toBe(200);
    const refused = await post('/rpc/system/health', body(MAX_JSON_DEPTH + 1), { 'content-type': 'application/json' });
    expect(refused.status).toBe(400);
    expect((await refused.json()).message).toContain(`more than ${MAX_JSON_DEPTH} levels`);
  });
});

describe('bodies over the limit', () => {
  it('a declared Content-Length over the limit answers 413 at once, unread, and closes', async () => {
    for (const path of ['/api/v1/workspaces', '/rpc/workspaces/create', '/api/auth/organization/create']) {
      const answer = await rawRequest(server.origin, {
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', 'content-length': String(64 * MAX_BODY_BYTES), authorization: `Bearer ${user.token}` },
      });
      expect(answer.status, path).toBe(413);
      expect(JSON.parse(answer.body)).toEqual({ error: 'payload_too_large', message: `Request body exceeds ${MAX_BODY_BYTES} bytes.`, requestId: expect.any(String) });
      expect(answer.headers.connection).toBe('close');
      expect(answer.closed, path).toBe(true);
      expect(answer.sent).toBe(0);
    }
  });

  it('a chunked body that keeps coming is cut off at the limit with 413 and the connection closed', async () => {
    for (const path of ['/rpc/workspaces/create', '/api/auth/sign-in/email']) {
      const answer = await rawRequest(
        server.origin,
        {
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
          body: '1\r\n[\r\n',
          stream: { chunkBytes: 64 * 1024, maxBytes: 256 * MAX_BODY_BYTES },
        },
        20_000,
      );
      expect(answer.status, path).toBe(413);
      expect(JSON.parse(answer.body)).toMatchObject({ error: 'payload_too_large' });
      expect(answer.closed, path).toBe(true);
      // The server stopped reading near the limit (socket buffers let a few MiB more go out).
      expect(answer.sent, path).toBeLessThan(64 * MAX_BODY_BYTES);
    }
  });

  it('a body of exactly the limit is read', async () => {
    const padding = MAX_BODY_BYTES - '{"json":{},"pad":""}'.length;
    const body = `{"json":{},"pad":"${'x'.repeat(padding)}"}`;
    expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES);
    expect((await post('/rpc/system/health', body, { 'content-type': 'application/json' })).status).toBe(200);
    expect((await post('/rpc/system/health', `${body} `, { 'content-type': 'application/json' })).status).toBe(413);
  });
});

describe('sign-in and sign-up from an untrusted Origin (login CSRF)', () => {
  const routes = [
    ['/api/auth/sign-in/email', () => ({ email: user.email, password: TEST_PASSWORD })],
    ['/api/auth/sign-up/email', () => ({ name: 'Mallory', email: `mallory-${Math.random().toString(36).slice(2)}@example.com`, password: 'long enough password' })],
    ['/api/auth/sign-in/social', () => ({ provider: 'github' })],
  ] as const;
  for (const [path, body] of routes) {
    it(`${path} refuses an untrusted or null Origin with 403 even without a cookie`, async () => {
      for (const origin of ['https://evil.example.com', 'null', 'https://partner.example.com.evil.example']) {
        const response = await server.fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', origin }, body: JSON.stringify(body()) });
        expect(response.status, origin).toBe(403);
        expect(response.headers.get('set-cookie')).toBeNull();
        expectErrorShape(await response.json(), 'FORBIDDEN', 403);
      }
    });

    it(`${path} accepts a trusted Origin and no Origin at all`, async () => {
      for (const headers of [{ origin: 'https://partner.example.com' }, {}]) {
        const response = await server.fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body()) });
        // sign-in/social answers 412 here: no provider is configured. What matters is that the Origin passed.
        expect(response.status, JSON.stringify(headers)).not.toBe(403);
      }
    });
  }
});

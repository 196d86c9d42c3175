import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import type { Database } from '../../src/db/connection.ts';
import { createReadinessCheck } from '../../src/http/readiness.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createTestDatabase } from '../support/database.ts';
import generated from '../../generated/openapi.json' with { type: 'json' };
import generatedAuth from '../../generated/auth-openapi.json' with { type: 'json' };

// One server (and its database) for the whole file: every test here only reads, so none needs a
// fresh one; the servers of other settings share its database. None makes an AI call.
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ aiService: false });
});
afterAll(() => server?.close());

describe('/healthz and /readyz', () => {
  it('/healthz answers while the process runs', async () => {
    const response = await server.fetch('/healthz');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  it('/readyz answers 200 when the database answers', async () => {
    const response = await server.fetch('/readyz');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok', checks: { database: 'ok' } });
  });
});

describe('/readyz when the database does not answer', () => {
  // One server whose database answers each ping as the running test sets it.
  let ping: () => Promise<void> = () => Promise.resolve();
  let broken: TestServer;
  beforeAll(async () => {
    const db: Database = server.db;
    broken = await startTestServer({ aiService: false, db: { ...db, ping: () => ping() } });
  });
  afterAll(() => broken?.close());

  async function readyWith(answer: () => Promise<void>) {
    ping = answer;
    const response = await broken.fetch('/readyz');
    return { status: response.status, body: await response.json(), cache: response.headers.get('cache-control') };
  }

  it('answers 503 unreachable, exactly as specified', async () => {
    const result = await readyWith(() => Promise.reject(new Error('ECONNREFUSED')));
    expect(result).toEqual({ status: 503, body: { status: 'unavailable', checks: { database: 'unreachable' } }, cache: null });
  });

  it('answers 503 timeout after 2 seconds', async () => {
    const result = await readyWith(() => new Promise(() => {}));
    expect(result.status).toBe(503);
    expect(result.body).toEqual({ status: 'unavailable', checks: { database: 'timeout' } });
  });

  it('answers 503 unreachable once the real database is gone', async () => {
    const own = await createTestDatabase({ fresh: true });
    const gone = await startTestServer({ aiService: false, db: own });
    try {
      await own.close();
      const response = await gone.fetch('/readyz');
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({ status: 'unavailable', checks: { database: 'unreachable' } });
    } finally {
      await gone.close();
    }
  });

  it('concurrent probes share one bounded check', async () => {
    let pings = 0;
    const check = createReadinessCheck(async () => {
      pings += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }, 2000);
    const results = await Promise.all(Array.from({ length: 20 }, () => check()));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(pings).toBe(1);
    await check();
    expect(pings).toBe(2); // a later probe checks again
  });
});

describe('GET /api/v1/openapi.json', () => {
  it('serves the contract with the package version, an ETag and no-cache', async () => {
    const response = await server.fetch('/api/v1/openapi.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('etag')).toMatch(/^"[\w-]+"$/);
    const document = await response.json();
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe(packageJson.version);
  });

  it('answers 304 to a matching If-None-Match, and 200 otherwise', async () => {
    const etag = (await server.fetch('/api/v1/openapi.json')).headers.get('etag')!;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const response = await server.fetch('/api/v1/openapi.json', { headers: { 'if-none-match': header } });
      expect(response.status, header).toBe(304);
      expect(response.headers.get('etag')).toBe(etag);
    }
    expect((await server.fetch('/api/v1/openapi.json', { headers: { 'if-none-match': '"stale"' } })).status).toBe(200);
  });

  it('system.health reports the same version', async () => {
    const response = await server.fetch('/api/v1/health');
    expect((await response.json()).version).toBe(packageJson.version);
  });

  it('names this deployment first: PUBLIC_URL + /api/v1, then the relative server; otherwise the generated document', async () => {
    const document = await (await server.fetch('/api/v1/openapi.json')).json();
    expect(document.servers[0].url).toBe(`${server.origin}/api/v1`);
    expect(document.servers.map((s: { url: string }) => s.url)).toEqual([`${server.origin}/api/v1`, '/api/v1']);
    // The signed upload addresses live at the service root: their own servers name it first.
    const uploads = document.paths['/uploads/{organizationId}/{documentId}'];
    expect(uploads.servers.map((s: { url: string }) => s.url)).toEqual([server.origin, '/']);
    const paths = { ...document.paths, '/uploads/{organizationId}/{documentId}': generated.paths['/uploads/{organizationId}/{documentId}'] };
    expect({ ...document, servers: generated.servers, paths }).toEqual(generated);
  });

  it('the identity document names PUBLIC_URL + /api/auth first', async () => {
    const response = await server.fetch('/api/auth/openapi.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('etag')).toMatch(/^"[\w-]+"$/);
    const document = await response.json();
    expect(document.servers.map((s: { url: string }) => s.url)).toEqual([`${server.origin}/api/auth`, '/api/auth']);
    expect({ ...document, servers: generatedAuth.servers }).toEqual(generatedAuth);
  });
});

describe('the served documents under another PUBLIC_URL', () => {
  let local: TestServer;
  let other: TestServer;
  beforeAll(async () => {
    local = server;
    other = await startTestServer({ aiService: false, db: server.db, env: { PUBLIC_URL: 'https://api.example.com/' } });
  });
  afterAll(() => other?.close());

  it('name that address, and their ETags change with it', async () => {
    for (const [path, base] of [
      ['/api/v1/openapi.json', '/api/v1'],
      ['/api/auth/openapi.json', '/api/auth'],
    ] as const) {
      const here = await local.fetch(path);
      const there = await other.fetch(path);
      expect((await there.json()).servers[0], path).toEqual({ url: `https://api.example.com${base}`, description: 'This deployment (its PUBLIC_URL).' });
      const etag = there.headers.get('etag')!;
      expect(etag, path).not.toBe(here.headers.get('etag'));
      // Each deployment answers 304 to its own ETag only.
      expect((await other.fetch(path, { headers: { 'if-none-match': etag } })).status, path).toBe(304);
      expect((await local.fetch(path, { headers: { 'if-none-match': etag } })).status, path).toBe(200);
    }
  });
});

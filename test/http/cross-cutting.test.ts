import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    env: { TRUSTED_ORIGINS: 'https://partner.example.com', WEB_URL: 'https://app.example.com' },
    overrides: {
      handlers: {
        'system.authConfig': () => {
          throw new Error('database on fire');
        },
      },
    },
  });
});
afterAll(() => server.close());

describe('X-Request-Id', () => {
  it('echoes a well-formed client value', async () => {
    const response = await server.fetch('/api/v1/health', { headers: { 'x-request-id': 'client-42.abc' } });
    expect(response.headers.get('x-request-id')).toBe('client-42.abc');
  });

  const refused = ['has spaces in it', 'x'.repeat(129), 'quote"d', '%C3%BCnicode', 'semi;colon'];
  for (const value of refused) {
    it(`replaces ${JSON.stringify(value.slice(0, 20))} with a fresh UUID`, async () => {
      const response = await server.fetch('/api/v1/health', { headers: { 'x-request-id': value } });
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });
  }

  it('is on every response, errors included', async () => {
    for (const path of ['/healthz', '/readyz', '/nope', '/api/v1/me', '/api/v1/openapi.json']) {
      const response = await server.fetch(path);
      expect(response.headers.get('x-request-id'), path).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('appears on the access-log line and on the error log line', async () => {
    const response = await server.fetch('/api/v1/auth-config', { headers: { 'x-request-id': 'trace-500' } });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: 'internal_error', requestId: 'trace-500' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const lines = server.logs.filter((line) => line.requestId === 'trace-500');
    const errors = lines.filter((line) => line.level === 50 && line.msg !== 'request');
    expect(errors).toHaveLength(1); // the cause is logged once
    expect(errors[0]!.err.message).toBe('database on fire');
    // The access-log line of a 5xx is at error level and names the error.
    expect(lines.filter((line) => line.msg === 'request')).toEqual([expect.objectContaining({ level: 50, status: 500, code: 'internal_error', method: 'GET', path: '/api/v1/auth-config' })]);
  });

  it('logs 4xx access lines at warn with their code, and the rest at info without one', async () => {
    await server.fetch('/api/v1/me', { headers: { 'x-request-id': 'trace-401' } });
    await server.fetch('/api/v1/health', { headers: { 'x-request-id': 'trace-200' } });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const line = (id: string) => server.logs.find((entry) => entry.requestId === id && entry.msg === 'request');
    expect(line('trace-401')).toMatchObject({ level: 40, status: 401, code: 'UNAUTHORIZED' });
    expect(line('trace-200')).toMatchObject({ level: 30, status: 200 });
    expect(line('trace-200')).not.toHaveProperty('code');
  });
});

describe('security headers', () => {
  const policy = "default-src 'none'; frame-ancestors 'none'";

  it('every API response carries the CSP and private, no-store', async () => {
    for (const [path, init] of [
      ['/api/v1/health', {}],
      ['/api/v1/me', {}],
      ['/api/v1/nope', {}],
      ['/rpc/system/health', { method: 'POST' }],
    ] as const) {
      const response = await server.fetch(path, init);
      expect(response.headers.get('content-security-policy'), path).toBe(policy);
      expect(response.headers.get('cache-control'), path).toBe('private, no-store');
    }
  });

  it('/healthz and /readyz set no cache header but keep the CSP', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const response = await server.fetch(path);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control'), path).toBeNull();
      expect(response.headers.get('content-security-policy'), path).toBe(policy);
    }
  });
});

describe('CORS', () => {
  it('allows a trusted origin and the web URL, with credentials, exposing set-auth-token', async () => {
    for (const origin of ['https://partner.example.com', 'https://app.example.com']) {
      const response = await server.fetch('/api/v1/health', { headers: { origin } });
      expect(response.headers.get('access-control-allow-origin')).toBe(origin);
      expect(response.headers.get('access-control-allow-credentials')).toBe('true');
      expect(response.headers.get('access-control-expose-headers')).toContain('set-auth-token');
    }
  });

  it('gives no CORS grant to any other origin', async () => {
    const response = await server.fetch('/api/v1/health', { headers: { origin: 'https://evil.example.com' } });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('a preflight may ask for Last-Event-Id', async () => {
    const response = await fetch(`${server.origin}/api/v1/organizations/org_1/jobs/stream`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'last-event-id, authorization' },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('last-event-id');
    expect(response.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
  });
});

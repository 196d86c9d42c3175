/**
 * What Node's HTTP server refuses before the app sees a request (src/http/server-errors.ts): a
 * malformed request, headers over maxHeaderSize, an Expect other than 100-continue. Each answer is
 * `{ error, message, requestId }` with the status Node chose, an X-Request-Id equal to the body's
 * requestId, the security headers, and a closed connection.
 */
import { once } from 'node:events';
import { request, type IncomingMessage } from 'node:http';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { rawRequest, type RawRequest } from './raw-client.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const cases: { name: string; given: RawRequest; want: { status: number; error: string } }[] = [
  {
    name: 'a Content-Length that is not a number',
    given: { method: 'POST', path: '/api/v1/contact', headers: { 'content-type': 'application/json', 'content-length': 'abc' } },
    want: { status: 400, error: 'bad_request' },
  },
  {
    name: 'two different Content-Lengths',
    given: { method: 'POST', path: '/rpc/contact/send', headers: { 'content-length': '2', 'Content-Length': '3' }, body: '{}' },
    want: { status: 400, error: 'bad_request' },
  },
  {
    name: 'Content-Length with chunked Transfer-Encoding',
    given: { method: 'POST', path: '/rpc/contact/send', headers: { 'content-length': '2', 'transfer-encoding': 'chunked' }, body: '{}' },
    want: { status: 400, error: 'bad_request' },
  },
  { name: 'a request line that is not HTTP/1.1', given: { method: 'GET', path: '/api/v1/health HTTP/1.1 extra' }, want: { status: 400, error: 'bad_request' } },
  { name: 'a 20 KB query string (over maxHeaderSize)', given: { method: 'GET', path: `/api/v1/health?q=${'a'.repeat(20_000)}` }, want: { status: 431, error: 'headers_too_large' } },
  { name: 'a 20 KB header', given: { method: 'GET', path: '/api/v1/health', headers: { 'x-padding': 'a'.repeat(20_000) } }, want: { status: 431, error: 'headers_too_large' } },
  { name: 'Expect: anything', given: { method: 'GET', path: '/api/v1/health', headers: { expect: 'anything' } }, want: { status: 417, error: 'expectation_failed' } },
  {
    name: 'an unknown Expect with a body',
    given: { method: 'POST', path: '/api/v1/health', headers: { expect: 'something-else', 'content-length': '2' }, body: '{}' },
    want: { status: 417, error: 'expectation_failed' },
  },
];

describe("Node's own refusals, in the service's shape", () => {
  it.each(cases)('$name: $want.status $want.error', async ({ given, want }) => {
    const answer = await rawRequest(server.origin, given);
    expect(answer.status).toBe(want.status);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = JSON.parse(answer.body);
    expect(body).toEqual({ error: want.error, message: expect.any(String), requestId: expect.stringMatching(UUID) });
    expect(answer.headers['x-request-id']).toBe(body.requestId);
    expect(answer.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(answer.headers['cache-control']).toBe('private, no-store');
    expect(answer.headers.connection).toBe('close');
    expect(answer.closed).toBe(true);
    // One warn line, with the id the client saw.
    await expect.poll(() => server.logs.filter((line) => line.requestId === body.requestId)).toEqual([expect.objectContaining({ level: 40, msg: 'request', status: want.status, code: want.error })]);
  });

  it('Expect: 100-continue still reaches the app', async () => {
    const req = request(`${server.origin}/rpc/system/health`, { method: 'POST', headers: { expect: '100-continue', 'content-type': 'application/json', 'content-length': '2' } });
    req.on('continue', () => req.end('{}'));
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    expect(res.statusCode).toBe(200);
    expect(JSON.parse((await buffer(res)).toString())).toMatchObject({ json: { status: 'ok' } });
  });

  it('a well-formed request on the same server is answered as always', async () => {
    const response = await server.fetch('/api/v1/health');
    expect(response.status).toBe(200);
  });
});

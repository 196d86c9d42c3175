/**
 * The X-Request-Id of the answers Node's HTTP server gives by itself (src/http/server-errors.ts)
 * follows the specification's rule 5 like every other answer: the client's own well-formed value
 * is echoed whenever the request's headers were parsed (an Expect refused with 417, a chunked body
 * that turns out malformed), else a fresh UUID (a malformed header, or a well-formed id that
 * belongs to an earlier request of the connection). Over a raw socket, which sends what fetch won't.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { rawRequest, type RawRequest } from './raw-client.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ aiService: false });
});
afterAll(() => server?.close());

const ID = 'client-id_42:retry=1';
const cases: { name: string; given: RawRequest; want: { status: number; requestId: string | RegExp } }[] = [
  { name: 'an Expect other than 100-continue', given: { method: 'GET', path: '/api/v1/health', headers: { expect: 'anything', 'x-request-id': ID } }, want: { status: 417, requestId: ID } },
  {
    name: 'an Expect with a body',
    given: { method: 'POST', path: '/api/v1/health', headers: { expect: 'something-else', 'content-length': '2', 'x-request-id': ID }, body: '{}' },
    want: { status: 417, requestId: ID },
  },
  { name: 'an Expect with a malformed id', given: { method: 'GET', path: '/api/v1/health', headers: { expect: 'anything', 'x-request-id': 'not well formed!' } }, want: { status: 417, requestId: UUID } },
  {
    name: 'an Expect with an id over 128 characters',
    given: { method: 'GET', path: '/api/v1/health', headers: { expect: 'anything', 'x-request-id': 'a'.repeat(129) } },
    want: { status: 417, requestId: UUID },
  },
  {
    name: 'a malformed chunked body after parsed headers',
    given: { method: 'POST', path: '/rpc/system/health', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'x-request-id': ID }, body: 'zz\r\n{}\r\n' },
    want: { status: 400, requestId: ID },
  },
  {
    name: 'a malformed Content-Length (headers not parsed)',
    given: { method: 'POST', path: '/api/v1/contact', headers: { 'content-length': 'abc', 'x-request-id': ID } },
    want: { status: 400, requestId: UUID },
  },
];

describe('X-Request-Id on the answers Node gives by itself', () => {
  it.each(cases)('$name: $want.status, id $want.requestId', async ({ given, want }) => {
    const answer = await rawRequest(server.origin, given);
    expect(answer.status).toBe(want.status);
    const body = JSON.parse(answer.body);
    expect(answer.headers['x-request-id']).toBe(body.requestId);
    if (typeof want.requestId === 'string') expect(body.requestId).toBe(want.requestId);
    else expect(body.requestId).toMatch(want.requestId);
    // The log line names the id the client saw.
    await expect.poll(() => server.logs.some((line) => line.requestId === body.requestId && line.status === want.status)).toBe(true);
  });

  it('a failure on a kept-alive connection does not take the id of the request before it', async () => {
    const { hostname, port } = new URL(server.origin);
    const socket = connect(Number(port), hostname);
    let text = '';
    const closed = new Promise((resolve) => socket.on('close', resolve));
    const firstAnswered = new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        const head = text.indexOf('\r\n\r\n');
        const length = /^content-length: (\d+)\r$/im.exec(text)?.[1];
        if (head >= 0 && length !== undefined && text.length >= head + 4 + Number(length)) resolve();
      });
    });
    socket.write(`GET /api/v1/health HTTP/1.1\r\nHost: ${hostname}\r\nX-Request-Id: first-request\r\n\r\n`);
    // The first request is complete and answered before the second begins on the same connection.
    await firstAnswered;
    socket.write(`POST /api/v1/contact HTTP/1.1\r\nHost: ${hostname}\r\nX-Request-Id: second-request\r\nContent-Length: abc\r\n\r\n`);
    await closed;
    const ids = [...text.matchAll(/^x-request-id: (.*)\r$/gim)].map((match) => match[1]);
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(text).toMatch(/HTTP\/1\.1 400 Bad Request/);
    expect(ids[0]).toBe('first-request');
    expect(ids[1]).toMatch(UUID);
  });
});

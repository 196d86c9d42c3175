/**
 * Every client can read an answer sent before its request's body was read (lingering-close.ts):
 * a real fetch (undici) sending 30 MiB reads the 413 (or 403, 404) every time, on every kind of
 * route that answers early, and the lingering close keeps to its bounds.
 *
 * The fetches run in a child process: with client and server on one event loop, the server's
 * close and the client's writes take turns and the reset never happens (the same ten fetches
 * passed in-process before the fix, and three in ten failed with EPIPE from another process).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../src/http/error-handler.ts';
import { DRAIN_BYTES, LINGER_LIMITS, lingeringClose, type LingerLimits } from '../../src/http/lingering-close.ts';
import type { TestServer } from '../support/server.ts';
import { startTenantServer, type Tenant } from '../jobs/support.ts';

const MiB = 1024 * 1024;
const BIG = 30 * MiB;

interface ChildRequest {
  url: string;
  method: string;
  headers?: Record<string, string>;
  /** The body: `json` is `{"name":"xxx…"}` of about `bytes` bytes, `bytes` that many bytes. */
  body: { kind: 'json' | 'bytes'; bytes: number };
  times: number;
}
type Outcome = { status: number; connection: string | null; body: string } | { error: string };

// Plain JavaScript for the child: one fetch after another, each outcome a JSON line.
const CHILD = `
const spec = JSON.parse(process.argv[1]);
const body = spec.body.kind === 'json' ? JSON.stringify({ name: 'x'.repeat(spec.body.bytes) }) : new Uint8Array(spec.body.bytes);
for (let i = 0; i < spec.times; i += 1) {
  try {
    const response = await fetch(spec.url, { method: spec.method, headers: spec.headers, body });
    const text = await response.text();
    console.log(JSON.stringify({ status: response.status, connection: response.headers.get('connection'), body: text }));
  } catch (error) {
    console.log(JSON.stringify({ error: String(error.cause?.code ?? error.cause ?? error) }));
  }
}`;

/** Runs `request.times` fetches, one after another, in a Node process of their own; answers each one's outcome. */
async function fetchFromChild(request: ChildRequest): Promise<Outcome[]> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD, JSON.stringify(request)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const [code] = (await once(child, 'close')) as [number];
  expect(code, err).toBe(0);
  return out
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Outcome);
}

let server: TestServer;
let t: Tenant;
beforeAll(async () => {
  ({ server, t } = await startTenantServer({ env: { RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000' }, aiService: false }));
});
afterAll(async () => {
  await server?.close();
});

describe('a 30 MiB body answered before it is read, to a real fetch from another process', () => {
  it('POST /api/v1/workspaces: the 413 is read 10 times in 10', async () => {
    const outcomes = await fetchFromChild({
      url: `${server.origin}/api/v1/workspaces`,
      method: 'POST',
      headers: { 'content-type': 'application/json', ...t.owner.headers },
      body: { kind: 'json', bytes: BIG },
      times: 10,
    });
    expect(outcomes).toHaveLength(10);
    for (const outcome of outcomes) {
      expect(outcome).toEqual({ status: 413, connection: 'close', body: expect.any(String) });
      if ('body' in outcome) expect(JSON.parse(outcome.body)).toEqual({ error: 'payload_too_large', message: `Request body exceeds ${MAX_BODY_BYTES} bytes.`, requestId: expect.any(String) });
    }
  });

  it.each([
    ['the RPC transport', '/rpc/workspaces/create'],
    ['an identity route', '/api/auth/sign-in/email'],
  ])('%s: the 413 is read every time', async (_name, path) => {
    const outcomes = await fetchFromChild({ url: `${server.origin}${path}`, method: 'POST', headers: { 'content-type': 'application/json' }, body: { kind: 'json', bytes: BIG }, times: 3 });
    expect(outcomes.map((outcome) => ('status' in outcome ? outcome.status : outcome.error))).toEqual([413, 413, 413]);
  });

  it('an unknown route (no body reader): the 404 is read every time', async () => {
    const outcomes = await fetchFromChild({ url: `${server.origin}/nowhere`, method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: { kind: 'bytes', bytes: BIG }, times: 3 });
    for (const outcome of outcomes) {
      expect(outcome).toMatchObject({ status: 404, connection: 'close' });
      if ('body' in outcome) expect(JSON.parse(outcome.body)).toMatchObject({ code: 'NOT_FOUND', defined: false });
    }
  });

  describe('the signed upload PUT (local storage driver)', () => {
    async function pendingUpload() {
      const { upload } = await t.client.documents.createUpload({ organizationId: t.org, workspaceId: t.workspaceId, name: 'small.txt', contentType: 'text/plain', size: 5 });
      return upload;
    }
    // The address's headers without their Content-Length (5): fetch sends the body's own.
    const signedType = (upload: { headers: Record<string, string> }) => ({ 'content-type': upload.headers['content-type']! });

    it('413 too_large (more than the signed size) is read every time, and the address still takes its 5 bytes', async () => {
      const upload = await pendingUpload();
      const outcomes = await fetchFromChild({ url: upload.url, method: 'PUT', headers: signedType(upload), body: { kind: 'bytes', bytes: BIG }, times: 3 });
      for (const outcome of outcomes) {
        expect(outcome).toMatchObject({ status: 413, connection: 'close' });
        if ('body' in outcome) expect(JSON.parse(outcome.body)).toMatchObject({ error: 'too_large' });
      }
      expect((await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: 'hello' })).status).toBe(200);
    });

    it('403 invalid_signature is read every time', async () => {
      const upload = await pendingUpload();
      const tampered = upload.url.replace(/signature=[0-9a-f]{64}/, `signature=${'0'.repeat(64)}`);
      const outcomes = await fetchFromChild({ url: tampered, method: 'PUT', headers: signedType(upload), body: { kind: 'bytes', bytes: BIG }, times: 3 });
      for (const outcome of outcomes) {
        expect(outcome).toMatchObject({ status: 403, connection: 'close' });
        if ('body' in outcome) expect(JSON.parse(outcome.body)).toMatchObject({ error: 'invalid_signature' });
      }
    });
  });

  it("a chunked body Node's parser refuses (server-errors.ts): the client writes its 8 MiB to the end and reads the 400", async () => {
    // Half-open allowed: it keeps writing after the server's FIN, as fetch does with its body.
    const socket = connect({ port: Number(new URL(server.origin).port), host: '127.0.0.1', allowHalfOpen: true });
    await once(socket, 'connect');
    let received = '';
    let failure: Error | undefined;
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', (error) => (failure = error));
    const closed = once(socket, 'close');
    socket.write('POST /api/v1/workspaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n');
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    while (sent < 8 * MiB && !socket.destroyed) {
      sent += chunk.length;
      if (!socket.write(chunk)) await Promise.race([once(socket, 'drain'), closed]);
    }
    socket.end();
    await closed;
    expect(failure).toBeUndefined();
    expect(sent).toBe(8 * MiB);
    expect(received).toMatch(/^HTTP\/1.1 400 /);
    expect(received).toContain('"error":"bad_request"');
  });

  it('the server answers the next request after all of them', async () => {
    expect((await server.fetch('/api/v1/health')).status).toBe(200);
  });
});

/** What a client saw of a request sent on a raw socket that keeps sending after the answer. */
interface Seen {
  head: string;
  /** Body bytes the client wrote before the server closed the connection. */
  sent: number;
  /** The server's FIN arrived. */
  halfClosed: boolean;
}

describe('the lingering close keeps to its bounds (an app that refuses every body at once)', () => {
  let app: Server;
  let port: number;
  let limits: LingerLimits = LINGER_LIMITS;
  beforeAll(async () => {
    const router = express();
    router.use((req, res, next) => lingeringClose(limits)(req, res, next));
    router.use((_req, res) => void res.status(413).json({ error: 'payload_too_large' }));
    app = createServer(router).listen(0, '127.0.0.1');
    await once(app, 'listening');
    port = (app.address() as AddressInfo).port;
  });
  afterAll(async () => {
    app.closeAllConnections();
    app.close();
    await once(app, 'close');
  });
  const head = (length: number) => `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n`;
  // Bounds of time no test reaches: only the client, or the bound under test, can end the connection.
  const patient: LingerLimits = { ...LINGER_LIMITS, maxMs: 600_000, idleMs: 600_000 };

  /**
   * Sends `head`, then body bytes in 64 KiB writes (up to `maxBytes`, or forever), and keeps sending
   * after the answer, as a client does that does not watch for one; answers once the server has
   * closed its socket (which a client that sends nothing more cannot see).
   */
  async function sendPastTheAnswer(request: string, { maxBytes = Number.POSITIVE_INFINITY, closeAfterAnswer = false, pauseMs = 0 } = {}): Promise<Seen> {
    const accepted = once(app, 'connection') as Promise<[Socket]>;
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const [serverSide] = await accepted;
    // Not once(): that rejects on 'error' (the parser's, when the client closes mid-body), and only the close matters.
    const closed = new Promise((resolve) => serverSide.on('close', resolve));
    let received = '';
    let sent = 0;
    let halfClosed = false;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (closeAfterAnswer && received.includes('\r\n\r\n')) socket.end();
    });
    socket.on('end', () => (halfClosed = true));
    socket.on('error', () => {});
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = () => {
      while (!socket.destroyed && !socket.writableEnded && sent < maxBytes) {
        sent += chunk.length;
        if (!socket.write(chunk)) return void socket.once('drain', pump);
        // A slow client: a chunk now and then.
        if (pauseMs > 0) return void setTimeout(pump, pauseMs);
      }
    };
    await once(socket, 'connect');
    socket.write(request);
    pump();
    await closed;
    socket.destroy();
    return { head: received.split('\r\n\r\n')[0] ?? '', sent, halfClosed };
  }

  it('reads and discards a declared body to its end, after the answer and its FIN, then closes', async () => {
    limits = patient;
    const seen = await sendPastTheAnswer(head(8 * MiB), { maxBytes: 8 * MiB });
    expect(seen.head).toMatch(/^HTTP\/1.1 413 /);
    expect(seen.head).toMatch(/\r\nConnection: close\r\n/i);
    expect(seen.halfClosed).toBe(true);
    expect(seen.sent).toBe(8 * MiB);
  });

  it('stops reading past maxBytes and cuts the connection', async () => {
    limits = { ...patient, maxBytes: 2 * MiB };
    const seen = await sendPastTheAnswer(head(1024 * MiB));
    expect(seen.head).toMatch(/^HTTP\/1.1 413 /);
    // The bound and what the two sockets' buffers hold; a server that read on would have taken the whole GiB.
    expect(seen.sent).toBeGreaterThan(2 * MiB);
    expect(seen.sent).toBeLessThan(2 * MiB + 64 * MiB);
  });

  it('cuts a connection whose client goes silent (idleMs)', async () => {
    limits = { ...patient, idleMs: 50 };
    const silent = await sendPastTheAnswer(head(BIG), { maxBytes: 0 });
    expect(silent).toMatchObject({ sent: 0, halfClosed: true });
    expect(silent.head).toMatch(/^HTTP\/1.1 413 /);
  });

  it('cuts a connection whose client keeps sending slowly (maxMs), short of maxBytes', async () => {
    limits = { ...patient, maxMs: 200 };
    const slow = await sendPastTheAnswer(head(BIG), { pauseMs: 10 });
    expect(slow.head).toMatch(/^HTTP\/1.1 413 /);
    expect(slow.sent).toBeLessThan(BIG);
  });

  it('closes as soon as the client closes its side after reading the answer', async () => {
    limits = patient;
    const seen = await sendPastTheAnswer(head(BIG), { maxBytes: 0, closeAfterAnswer: true });
    expect(seen.head).toMatch(/^HTTP\/1.1 413 /);
    expect(seen.halfClosed).toBe(true);
  });

  it(`keeps the connection for a small declared body (up to ${DRAIN_BYTES} bytes) that Node drains`, async () => {
    limits = patient;
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    // The head alone: the body is still on its way when the answer goes out.
    socket.write(head(DRAIN_BYTES));
    while (!received.includes('"payload_too_large"}')) await once(socket, 'data');
    expect(received).not.toMatch(/\r\nConnection: close\r\n/i);
    socket.write(Buffer.alloc(DRAIN_BYTES, 0x20));
    socket.write(head(2));
    socket.write('{}');
    while (received.split('HTTP/1.1 413').length < 3) await once(socket, 'data');
    expect(socket.readableEnded).toBe(false);
    socket.destroy();
  });

  it('leaves requests without a body alone, even answered at once: kept alive', async () => {
    limits = patient;
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    while (!received.includes('"payload_too_large"}')) await once(socket, 'data');
    expect(received).toMatch(/\r\nConnection: keep-alive\r\n/i);
    socket.destroy();
  });
});

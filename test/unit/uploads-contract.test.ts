/**
 * The signed /uploads addresses (src/storage/upload-routes.ts) as the contract declares them
 * (openapi/paths/uploads.yaml): operations marked `x-transport: uploads`, which codegen keeps out
 * of the procedures, the RPC routes and the client; query parameters with the shapes
 * src/storage/signed-url.ts accepts; and every answer the real routes give (200, 400, 403, 404,
 * 405, 411, 413, on PUT, GET and HEAD) passing test/support/contract-check.ts with the headers
 * the contract says are required.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import { procedures } from '../../generated/procedures.ts';
import { findRoute } from '../../src/http/route-lookup.ts';
import { sign, verifySignedQuery } from '../../src/storage/signed-url.ts';
import { assertMatchesContract } from '../support/contract-check.ts';
import { deref as derefIn, readPublishedDocument, type Json } from '../support/openapi-document.ts';
import { startUploadApp, type UploadApp } from '../storage/support.ts';

const doc: Json = readPublishedDocument('openapi.json');
const PATH = '/uploads/{organizationId}/{documentId}';
const item: Json = doc.paths[PATH];

const deref = (value: Json): Json => derefIn(doc, value);

function parameter(op: Json, name: string): Json {
  const found = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(deref).find((p: Json) => p.name === name);
  if (!found) throw new Error(`no parameter ${name}`);
  return found;
}

const patternOf = (op: Json, name: string) => new RegExp(deref(parameter(op, name).schema).pattern, 'u');

describe('the /uploads operations are declared, and are not procedures', () => {
  it('PUT, GET and HEAD at the root server, marked x-transport: uploads, public by signature', () => {
    expect(
      Object.keys(item)
        .filter((key) => ['get', 'head', 'put', 'post', 'patch', 'delete', 'options', 'trace'].includes(key))
        .sort(),
    ).toEqual(['get', 'head', 'put']);
    expect(item.servers.map((server: Json) => server.url)).toEqual(['/']);
    for (const [method, name] of [
      ['put', 'uploads.put'],
      ['get', 'uploads.get'],
      ['head', 'uploads.head'],
    ] as const) {
      const op = item[method];
      expect(op.operationId).toBe(name);
      expect(op['x-transport']).toBe('uploads');
      expect(op.security).toEqual([]);
      expect(op.tags).toEqual(['uploads']);
    }
  });

  it('codegen leaves them out of the route table, the RPC routes and the client', () => {
    // Every other operation of the document is a procedure: the table is the contract minus these three.
    const operations = Object.values(doc.paths as Json).flatMap((pathItem: Json) => Object.values(pathItem).filter((op: Json) => typeof op?.operationId === 'string'));
    const others = operations.filter((op: Json) => op['x-transport'] !== 'uploads').map((op: Json) => op.operationId as string);
    expect(others.length).toBeGreaterThan(0);
    expect(Object.keys(procedures).sort()).toEqual(others.sort());
    expect(Object.keys(procedures).filter((name) => name.startsWith('uploads'))).toEqual([]);
    expect(Object.values(procedures).filter((p) => p.path.startsWith('/uploads'))).toEqual([]);
    expect(findRoute('POST', '/rpc/uploads/put')).toBeUndefined();
    expect(findRoute('PUT', '/api/v1/uploads/org_a/doc_b')).toBeUndefined();
    expect(createClient({ baseUrl: 'http://localhost' })).not.toHaveProperty('uploads');
  });

  it('the query parameters have the shapes signed-url.ts accepts (malformed otherwise)', () => {
    const secret = 'uploads-contract-secret';
    const now = new Date('2026-11-21T09:00:00Z');
    const zeros = '0'.repeat(64);
    const numbers = ['0', '1', '01', '1795253400', '9'.repeat(16), '9'.repeat(17), '-1', '1.5', '1e3', '', ' 1'];
    for (const value of numbers) {
      const put = new URLSearchParams({ expires: value, size: '5', signature: zeros });
      const verdict = verifySignedQuery(secret, { method: 'PUT', path: '/uploads/org_a/doc_b', query: put, now });
      expect(patternOf(item.put, 'expires').test(value), `expires=${value}`).toBe(verdict.ok || verdict.reason !== 'malformed');
      const sized = new URLSearchParams({ expires: '1795253400', size: value, signature: zeros });
      const sizeVerdict = verifySignedQuery(secret, { method: 'PUT', path: '/uploads/org_a/doc_b', query: sized, now });
      expect(patternOf(item.put, 'size').test(value), `size=${value}`).toBe(sizeVerdict.ok || sizeVerdict.reason !== 'malformed');
      const get = new URLSearchParams({ expires: value, signature: zeros });
      const getVerdict = verifySignedQuery(secret, { method: 'GET', path: '/uploads/org_a/doc_b', query: get, now });
      expect(patternOf(item.get, 'expires').test(value), `GET expires=${value}`).toBe(getVerdict.ok || getVerdict.reason !== 'malformed');
    }
    const real = sign(secret, { method: 'PUT', path: '/uploads/org_a/doc_b', expires: 1795253400, size: 5 });
    for (const value of [real, real.toUpperCase(), real.slice(1), `${real}0`, zeros]) {
      const verdict = verifySignedQuery(secret, { method: 'GET', path: '/uploads/org_a/doc_b', query: new URLSearchParams({ expires: '1795253400', signature: value }), now });
      expect(patternOf(item.get, 'signature').test(value), `signature=${value}`).toBe(verdict.ok || verdict.reason !== 'malformed');
    }
    // A download address carries no size; an upload address must.
    expect(item.get.parameters.map(deref).map((p: Json) => p.name)).not.toContain('size');
    expect(parameter(item.put, 'size').required).toBe(true);
  });

  it('every answer declares X-Request-Id; errors are TransportErrorBody (the bad path: the envelope)', () => {
    for (const method of ['put', 'get', 'head']) {
      for (const [status, response] of Object.entries<Json>(item[method].responses)) {
        expect(deref(deref(response).headers?.['X-Request-Id'] ?? {}).required, `${method} ${status}`).toBe(true);
      }
      expect(Object.keys(item[method].responses).sort(), method).toEqual(method === 'put' ? ['200', '400', '403', '404', '405', '411', '413', '500'] : ['200', '400', '403', '404', '405', '500']);
    }
    const download = deref(item.get.responses['200']);
    expect(Object.keys(download.content).sort()).toEqual([...deref(doc.components.schemas.DocumentContentType).enum].sort());
    expect(Object.keys(deref(item.put.requestBody).content).sort()).toEqual([...deref(doc.components.schemas.DocumentContentType).enum].sort());
    for (const header of ['Content-Length', 'Content-Disposition']) expect(download.headers[header].required).toBe(true);
  });
});

describe('the routes answer as the contract says', () => {
  const SECRET = 'uploads-contract-secret-0123456789';
  const MAX = 1024 * 1024;
  const ORG = 'org_pycdybk377oxtzq6svizx3or';
  const NOW = new Date('2026-11-21T09:15:00Z');
  let dataDir: string;
  let app: UploadApp;
  const documents = new Map<string, { name: string; contentType: string; status: 'pending' | 'ready' }>();

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-uploads-contract-'));
    app = await startUploadApp({
      dataDir,
      secret: SECRET,
      maxUploadBytes: MAX,
      now: () => NOW,
      describe: async (organizationId, documentId) => documents.get(`${organizationId}/${documentId}`) ?? null,
    });
  });
  afterAll(async () => {
    await app?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  function newDocument(name: string, contentType: string): string {
    const key = `${ORG}/doc_${Array.from(randomBytes(24), (byte) => 'abcdefghijklmnopqrstuvwxyz234567'[byte % 32]).join('')}`;
    documents.set(key, { name, contentType, status: 'pending' });
    return key;
  }

  interface Answer {
    status: number;
    headers: IncomingHttpHeaders;
    body: Buffer;
  }

  /** node:http, so a body can be chunked or never sent (the routes answer before reading it). */
  function send(url: string, method: string, headers: Record<string, string>, body?: Buffer | 'none' | 'chunked'): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = request(url, { method, headers }, (res) => {
        buffer(res).then((data) => {
          resolve({ status: res.statusCode!, headers: res.headers, body: data });
          req.destroy();
        }, reject);
      });
      req.on('error', reject);
      if (body === 'none') req.flushHeaders();
      else if (body === 'chunked') {
        req.write('hello');
        req.end();
      } else req.end(body);
    });
  }

  /** Checks the answer with the contract-check tests use, plus the declared response headers. */
  function check(method: string, url: string, answer: Answer): Json | undefined {
    const contentType = answer.headers['content-type'] ?? null;
    const text = answer.body.toString('utf8');
    const body = method === 'HEAD' || text === '' || !contentType?.includes('json') ? undefined : JSON.parse(text);
    assertMatchesContract(method, new URL(url), answer.status, contentType, body);
    const op = item[method.toLowerCase()] ?? item.put;
    const declared = deref(op.responses[String(answer.status)]);
    for (const [name, header] of Object.entries<Json>(declared.headers ?? {})) {
      if (deref(header).required) expect(answer.headers[name.toLowerCase()], `${method} ${answer.status} ${name}`).toBeDefined();
    }
    if (body?.requestId !== undefined) expect(body.requestId).toBe(answer.headers['x-request-id']);
    return body;
  }

  it('PUT 200 (no body), then GET and HEAD 200 with the bytes and their headers', async () => {
    const key = newDocument('Résumé.pdf', 'application/pdf');
    const bytes = randomBytes(4096);
    const upload = await app.driver.presignUpload(key, { contentType: 'application/pdf', size: bytes.length, expiresInSeconds: 900, now: NOW });
    const put = await send(upload.url, 'PUT', upload.headers, bytes);
    expect(put.status).toBe(200);
    check('PUT', upload.url, put);
    await app.driver.commitUpload(key);
    documents.get(key)!.status = 'ready';
    const download = await app.driver.presignDownload(key, { filename: 'Résumé.pdf', contentType: 'application/pdf', expiresInSeconds: 300, now: NOW });
    const got = await send(download.url, 'GET', {});
    expect(got.status).toBe(200);
    expect(got.body.equals(bytes)).toBe(true);
    check('GET', download.url, got);
    const head = await send(download.url, 'HEAD', {});
    expect(head.status).toBe(200);
    check('HEAD', download.url, head);

    // After complete, the upload address is refused (404), and the download address cannot upload (403).
    check('PUT', upload.url, await send(upload.url, 'PUT', upload.headers, bytes));
    check('PUT', download.url, await send(download.url, 'PUT', { 'content-type': 'application/pdf', 'content-length': '1' }, Buffer.from('x')));
  });

  it('403 invalid_signature, 404 not_found and 405 method_not_allowed on every method', async () => {
    const key = newDocument('notes.txt', 'text/plain');
    const upload = await app.driver.presignUpload(key, { contentType: 'text/plain', size: 5, expiresInSeconds: 900, now: NOW });
    const download = await app.driver.presignDownload(key, { filename: 'notes.txt', contentType: 'text/plain', expiresInSeconds: 300, now: NOW });
    const tampered = upload.url.replace('size=5', 'size=6');
    const answers: [string, string, Answer][] = [
      ['PUT', tampered, await send(tampered, 'PUT', { 'content-type': 'text/plain', 'content-length': '5' }, Buffer.from('hello'))],
      ['GET', upload.url, await send(upload.url, 'GET', {})],
      ['HEAD', upload.url, await send(upload.url, 'HEAD', {})],
      ['GET', download.url, await send(download.url, 'GET', {})], // still pending: 404
      ['HEAD', download.url, await send(download.url, 'HEAD', {})],
      ['POST', download.url, await send(download.url, 'POST', {})],
      ['DELETE', upload.url, await send(upload.url, 'DELETE', {})],
    ];
    expect(answers.map(([method, , answer]) => `${method} ${answer.status}`)).toEqual(['PUT 403', 'GET 403', 'HEAD 403', 'GET 404', 'HEAD 404', 'POST 405', 'DELETE 405']);
    for (const [method, url, answer] of answers) check(method, url, answer);
  });

  it('411 length_required, 413 too_large and 400 bad_request on PUT', async () => {
    const key = newDocument('data.csv', 'text/csv');
    const upload = await app.driver.presignUpload(key, { contentType: 'text/csv', size: 5, expiresInSeconds: 900, now: NOW });
    const chunked = await send(upload.url, 'PUT', { 'content-type': 'text/csv' }, 'chunked');
    expect(chunked.status).toBe(411);
    expect(check('PUT', upload.url, chunked)?.error).toBe('length_required');
    const large = await send(upload.url, 'PUT', { 'content-type': 'text/csv', 'content-length': '6' }, 'none');
    expect(large.status).toBe(413);
    expect(check('PUT', upload.url, large)?.error).toBe('too_large');

    // A Content-Length the HTTP parser takes but the route does not (17 digits), on a raw socket.
    const url = new URL(upload.url);
    const socket = connect(Number(url.port), '127.0.0.1');
    await once(socket, 'connect');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.write(`PUT ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: text/csv\r\nContent-Length: 12345678901234567\r\n\r\n`);
    await once(socket, 'close');
    const raw = Buffer.concat(chunks).toString('utf8');
    const [head, text] = raw.split('\r\n\r\n') as [string, string];
    const status = Number(head.split(' ')[1]);
    expect(status).toBe(400);
    const contentType = /^content-type: (.*)$/im.exec(head)?.[1]?.trim() ?? null;
    assertMatchesContract('PUT', url, status, contentType, JSON.parse(text));
    expect(JSON.parse(text).error).toBe('bad_request');
  });

  it('the check refuses what the contract does not declare', () => {
    const url = new URL(`http://localhost/uploads/${ORG}/doc_zjli6ufh3reosfhypn5nwk2d?expires=1&signature=x`);
    expect(() => assertMatchesContract('GET', url, 401, 'application/json', { error: 'invalid_signature', message: 'x', requestId: 'r' })).toThrow(/does not declare status 401/);
    expect(() => assertMatchesContract('GET', url, 403, 'application/json', { error: 'forbidden', message: 'x', requestId: 'r' })).toThrow(/breaks the contract/);
    expect(() => assertMatchesContract('GET', url, 200, 'application/zip', undefined)).toThrow(/expected one of/);
    expect(() => assertMatchesContract('PUT', url, 200, 'application/json', { ok: true })).toThrow(/declares no body/);
    // The HTTP layer's "no route" (the S3 driver mounts no /uploads routes) is allowed.
    assertMatchesContract('PUT', url, 404, 'application/json; charset=utf-8', { defined: false, code: 'NOT_FOUND', status: 404, message: 'No route for PUT /uploads/x/y.' });
  });
});

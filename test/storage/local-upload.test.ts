/**
 * The local driver's /uploads routes on a bare Express app (127.0.0.1:0): presigned PUT then GET,
 * every refusal (411, 413, 403, 404, 405), cleanup of refused or cut-off bodies, Content-Disposition
 * for non-ASCII names, and a 25 MiB upload that does not grow the heap.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { buffer } from 'node:stream/consumers';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createStorageDriver } from '../../src/storage/create-driver.ts';
import { ObjectNotFoundError } from '../../src/storage/driver.ts';
import { LocalDriver } from '../../src/storage/local-driver.ts';
import { parseDisposition, startUploadApp, type UploadApp } from './support.ts';

const SECRET = 'local-upload-test-secret-0123456789';
const MAX = 25 * 1024 * 1024;
const ORG = 'org_local';
const START = new Date('2026-11-20T10:00:00Z');

let clock = START;
let dataDir: string;
let app: UploadApp;
const documents = new Map<string, { name: string; contentType: string; status: 'pending' | 'ready' }>();
let counter = 0;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-uploads-'));
  app = await startUploadApp({
    dataDir,
    secret: SECRET,
    maxUploadBytes: MAX,
    now: () => clock,
    describe: async (organizationId, documentId) => documents.get(`${organizationId}/${documentId}`) ?? null,
  });
});

afterAll(async () => {
  await app?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

afterEach(() => {
  clock = START;
});

/** A fresh document id with a described name and type. */
function newDocument(name = 'notes.txt', contentType = 'text/plain'): string {
  const key = `${ORG}/doc_${++counter}_${randomBytes(4).toString('hex')}`;
  documents.set(key, { name, contentType, status: 'pending' });
  return key;
}

function presignUpload(key: string, size: number, contentType = 'text/plain') {
  return app.driver.presignUpload(key, { contentType, size, expiresInSeconds: 900, now: clock });
}

/** As in the service, a download address exists only once the document is complete (ready). */
function presignDownload(key: string) {
  const document = documents.get(key)!;
  document.status = 'ready';
  const { name, contentType } = document;
  return app.driver.presignDownload(key, { filename: name, contentType, expiresInSeconds: 300, now: clock });
}

/** PUTs the bytes, then commits them as documents.complete does (a PUT only ever writes the staged upload). */
async function put(key: string, bytes: Buffer): Promise<void> {
  const { url, headers } = await presignUpload(key, bytes.length);
  const response = await fetch(url, { method: 'PUT', headers, body: bytes });
  expect(response.status, await response.text()).toBe(200);
  await app.driver.commitUpload(key);
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * node:http, for what fetch will not do: a chunked body, or headers whose body never follows
 * (`body: 'none'`: the request is left open and the answer read as soon as it comes).
 */
function send(url: string, options: { method: string; headers?: Record<string, string>; body?: Buffer[] | 'none' }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method, headers: options.headers ?? {} }, (res) => {
      buffer(res).then((body) => {
        resolve({ status: res.statusCode!, headers: res.headers, body });
        req.destroy();
      }, reject);
    });
    req.on('error', reject);
    if (options.body === 'none') req.flushHeaders();
    else {
      for (const chunk of options.body ?? []) req.write(chunk);
      req.end();
    }
  });
}

/** Writes raw bytes on a new connection and answers everything the server wrote until it closed. */
async function raw(payload: Buffer, { closeAfterWrite = false } = {}): Promise<string> {
  const socket = connect(Number(new URL(app.origin).port), '127.0.0.1');
  await once(socket, 'connect');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  socket.write(payload);
  if (closeAfterWrite) socket.destroy();
  else await once(socket, 'close');
  return Buffer.concat(chunks).toString('latin1');
}

/** What is left in the organization's upload directory: only whole, renamed files. */
async function filesOf(organizationId = ORG): Promise<string[]> {
  return (await readdir(join(dataDir, 'uploads', organizationId)).catch(() => [])).sort();
}

/** global.gc without --expose-gc on the command line (the flag works for contexts made after it is set). */
function exposeGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

function json(answer: Answer): { error: string; message: string; requestId: string } {
  return JSON.parse(answer.body.toString('utf8'));
}

describe('PUT then GET', () => {
  it('stores the bytes of a presigned PUT and serves them back identically', async () => {
    const key = newDocument('report.pdf', 'application/pdf');
    const bytes = randomBytes(1024 * 1024 + 7);
    const upload = await presignUpload(key, bytes.length, 'application/pdf');
    expect(upload.headers).toEqual({ 'content-type': 'application/pdf', 'content-length': String(bytes.length) });
    expect(upload.expiresAt).toEqual(new Date(START.getTime() + 900_000));
    const url = new URL(upload.url);
    expect(url.origin).toBe(app.origin);
    expect(url.pathname).toBe(`/uploads/${key}`);
    expect([...url.searchParams.keys()]).toEqual(['expires', 'size', 'signature']);

    const response = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes });
    expect(response.status).toBe(200);
    expect(response.headers.get('etag')).toBeNull();
    expect(await response.text()).toBe('');
    expect(response.headers.get('x-request-id')).toBeTruthy();
    // The PUT wrote the staged upload; only the commit (documents.complete) puts it in place.
    expect(await app.driver.stat(key)).toBeNull();
    expect(await app.driver.commitUpload(key)).toEqual({ size: bytes.length });
    expect(await app.driver.stat(key)).toEqual({ size: bytes.length });
    expect((await readFile(app.driver.filePath(key))).equals(bytes)).toBe(true);

    const download = await presignDownload(key);
    expect([...new URL(download.url).searchParams.keys()]).toEqual(['expires', 'signature']);
    const got = await fetch(download.url);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('application/pdf');
    expect(got.headers.get('content-length')).toBe(String(bytes.length));
    expect(got.headers.get('content-disposition')).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);

    expect((await buffer(await app.driver.read(key))).equals(bytes)).toBe(true);
  });

  it('answers HEAD with the headers and no body', async () => {
    const key = newDocument('data.csv', 'text/csv');
    await put(key, Buffer.from('a,b\n1,2\n'));
    const answer = await send((await presignDownload(key)).url, { method: 'HEAD' });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('text/csv');
    expect(answer.headers['content-length']).toBe('8');
    expect(answer.headers['content-disposition']).toBe(`attachment; filename="data.csv"; filename*=UTF-8''data.csv`);
    expect(answer.body.length).toBe(0);
  });

  it('replaces an earlier upload of the same document and accepts fewer bytes than signed', async () => {
    const key = newDocument();
    await put(key, Buffer.from('first version, longer'));
    const { url, headers } = await presignUpload(key, 100);
    const answer = await send(url, { method: 'PUT', headers: { ...headers, 'content-length': '6' }, body: [Buffer.from('second')] });
    expect(answer.status).toBe(200);
    await app.driver.commitUpload(key);
    expect(await readFile(app.driver.filePath(key), 'utf8')).toBe('second');
  });

  it('stores an empty body', async () => {
    const key = newDocument();
    await put(key, Buffer.alloc(0));
    expect(await app.driver.stat(key)).toEqual({ size: 0 });
  });

  const names = ['Résumé.pdf', '日本語のファイル名.txt', 'Ünïcødé «quotes» “curly” — dash.md', 'emoji 🎉🚀 file.json', 'Привет мир.csv', 'עברית.txt', 'say "hi" \\ back.txt', "it's (1) * 100%.txt"];

  it.each(names)('round-trips the name %j through Content-Disposition', async (name) => {
    const key = newDocument(name);
    await put(key, Buffer.from('x'));
    const got = await fetch((await presignDownload(key)).url);
    expect(got.status).toBe(200);
    const disposition = parseDisposition(got.headers.get('content-disposition')!);
    expect(disposition.type).toBe('attachment');
    expect(disposition.filenameStar).toBe(name);
    expect(disposition.filename).toMatch(/^[\x20-\x7e]+$/);
  });
});

describe('PUT refusals', () => {
  it('answers 411 length_required to a chunked body and keeps nothing', async () => {
    const key = newDocument();
    const { url } = await presignUpload(key, 10);
    const answer = await send(url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: [Buffer.from('abc'), Buffer.from('def')] });
    expect(answer.status).toBe(411);
    expect(json(answer)).toEqual({ error: 'length_required', message: expect.any(String), requestId: answer.headers['x-request-id'] });
    expect(await app.driver.stat(key)).toBeNull();
  });

  it('answers 413 too_large when Content-Length exceeds MAX_UPLOAD_BYTES, before reading the body', async () => {
    const key = newDocument();
    const { url } = await presignUpload(key, MAX + 100);
    const answer = await send(url, { method: 'PUT', headers: { 'content-type': 'text/plain', 'content-length': String(MAX + 1) }, body: 'none' });
    expect(answer.status).toBe(413);
    expect(json(answer).error).toBe('too_large');
    expect(answer.headers.connection).toBe('close');
    expect(await app.driver.stat(key)).toBeNull();
  });

  it('answers 413 too_large when Content-Length exceeds the signed size', async () => {
    const key = newDocument();
    const { url } = await presignUpload(key, 100);
    const answer = await send(url, { method: 'PUT', headers: { 'content-type': 'text/plain', 'content-length': '101' }, body: 'none' });
    expect(answer.status).toBe(413);
    expect(json(answer)).toEqual({ error: 'too_large', message: expect.stringContaining('100'), requestId: expect.any(String) });
    expect(await app.driver.stat(key)).toBeNull();
  });

  /** Resolves once the route has given up on the upload sent with this X-Request-Id. */
  async function abandoned(id: string): Promise<void> {
    await expect.poll(() => app.logs.some((line) => line.requestId === id && /nothing kept/.test(line.msg))).toBe(true);
  }

  it('keeps nothing when more bytes arrive than Content-Length declared', async () => {
    const key = newDocument();
    const { url } = await presignUpload(key, 10);
    const { pathname, search } = new URL(url);
    const id = `excess-${randomBytes(4).toString('hex')}`;
    // Node's HTTP parser ends the body at Content-Length and reads the rest as a next request,
    // which it refuses (400) before closing the connection: the client never hears of success, so
    // the upload must not count.
    const text = await raw(
      Buffer.from(`PUT ${pathname}${search} HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${id}\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\n0123456789EXTRA BYTES THAT DO NOT BELONG`),
    );
    const statuses = [...text.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]));
    expect(statuses).toEqual([400]);
    await abandoned(id);
    expect(await app.driver.stat(key)).toBeNull();
    expect((await filesOf()).filter((name) => name.endsWith('.part'))).toEqual([]);
  });

  it('keeps nothing when the client goes away mid-body', async () => {
    const key = newDocument();
    const { url } = await presignUpload(key, 1000);
    const { pathname, search } = new URL(url);
    const id = `cut-${randomBytes(4).toString('hex')}`;
    await raw(Buffer.from(`PUT ${pathname}${search} HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${id}\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n${'a'.repeat(400)}`), { closeAfterWrite: true });
    await abandoned(id);
    expect(await app.driver.stat(key)).toBeNull();
    expect((await filesOf()).filter((name) => name.endsWith('.part'))).toEqual([]);
  });

  const tampered: { name: string; change: (url: URL, key: string) => void | Promise<void>; method?: string }[] = [
    { name: 'another document', change: (url) => void (url.pathname = `/uploads/${ORG}/doc_other`) },
    { name: 'another organization', change: (url, key) => void (url.pathname = `/uploads/org_other/${key.split('/')[1]}`) },
    { name: 'a later expiry', change: (url) => url.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600)) },
    { name: 'a larger size', change: (url) => url.searchParams.set('size', '999999') },
    { name: 'a changed signature', change: (url) => url.searchParams.set('signature', '0'.repeat(64)) },
    { name: 'no signature', change: (url) => url.searchParams.delete('signature') },
    { name: 'no query at all', change: (url) => void (url.search = '') },
    {
      name: 'a download signature used to upload',
      change: async (url, key) => {
        const download = new URL((await presignDownload(key)).url);
        url.search = `${download.search}&size=${url.searchParams.get('size')}`;
      },
    },
  ];

  it.each(tampered)('answers 403 invalid_signature for $name', async ({ change }) => {
    const key = newDocument();
    const upload = await presignUpload(key, 5);
    const url = new URL(upload.url);
    await change(url, key);
    const answer = await send(url.href, { method: 'PUT', headers: upload.headers, body: [Buffer.from('hello')] });
    expect(answer.status).toBe(403);
    expect(json(answer)).toEqual({ error: 'invalid_signature', message: expect.any(String), requestId: answer.headers['x-request-id'] });
    expect(await filesOf()).not.toContain(key.split('/')[1]);
  });

  // S3 signs the Content-Type of a presigned PUT and refuses any other (403 SignatureDoesNotMatch).
  const contentTypes: { name: string; headers: Record<string, string> }[] = [
    { name: 'another Content-Type', headers: { 'content-type': 'text/html' } },
    { name: 'a charset the address was not made with', headers: { 'content-type': 'text/plain; charset=utf-8' } },
    { name: 'no Content-Type', headers: {} },
  ];
  it.each(contentTypes)('answers 403 invalid_signature to $name, before reading the body', async ({ headers }) => {
    const key = newDocument();
    const upload = await presignUpload(key, 5);
    const answer = await send(upload.url, { method: 'PUT', headers: { 'content-length': '5', ...headers }, body: 'none' });
    expect(answer.status).toBe(403);
    expect(json(answer)).toEqual({ error: 'invalid_signature', message: expect.stringContaining('Content-Type'), requestId: answer.headers['x-request-id'] });
    expect(answer.headers.connection).toBe('close');
    expect(await filesOf()).not.toContain(key.split('/')[1]);
  });

  it('answers 403 once the upload address has expired', async () => {
    const key = newDocument();
    const upload = await presignUpload(key, 5);
    clock = new Date(START.getTime() + 900_000);
    const answer = await send(upload.url, { method: 'PUT', headers: upload.headers, body: [Buffer.from('hello')] });
    expect(answer.status).toBe(403);
    expect(json(answer).message).toMatch(/expired/);
    clock = new Date(START.getTime() + 899_000);
    expect((await send(upload.url, { method: 'PUT', headers: upload.headers, body: [Buffer.from('hello')] })).status).toBe(200);
  });

  it('checks the signature before anything else', async () => {
    const answer = await send(`${app.origin}/uploads/${ORG}/doc_x?expires=1&size=1&signature=${'0'.repeat(64)}`, { method: 'PUT', body: [Buffer.from('abc')] });
    expect(answer.status).toBe(403);
  });
});

describe('GET and HEAD refusals', () => {
  it('answers 403 to an upload address, a tampered one and an expired one', async () => {
    const key = newDocument();
    await put(key, Buffer.from('hello'));
    const upload = new URL((await presignUpload(key, 5)).url);
    upload.searchParams.delete('size');
    expect((await send(upload.href, { method: 'GET' })).status).toBe(403);

    const download = await presignDownload(key);
    const other = new URL(download.url);
    other.pathname = `/uploads/${ORG}/doc_elsewhere`;
    expect((await send(other.href, { method: 'GET' })).status).toBe(403);
    expect((await send(other.href, { method: 'HEAD' })).status).toBe(403);

    clock = new Date(START.getTime() + 300_000);
    const expired = await send(download.url, { method: 'GET' });
    expect(expired.status).toBe(403);
    expect(json(expired).error).toBe('invalid_signature');
  });

  it('answers 404 when nothing was uploaded, for GET and HEAD', async () => {
    const key = newDocument();
    const { url } = await presignDownload(key);
    const answer = await send(url, { method: 'GET' });
    expect(answer.status).toBe(404);
    expect(json(answer)).toEqual({ error: 'not_found', message: expect.any(String), requestId: answer.headers['x-request-id'] });
    expect((await send(url, { method: 'HEAD' })).status).toBe(404);
    expect(await app.driver.stat(key)).toBeNull();
    await expect(app.driver.read(key)).rejects.toBeInstanceOf(ObjectNotFoundError);
  });

  it('answers 404 when describe() knows no such document', async () => {
    const key = newDocument();
    await put(key, Buffer.from('hello'));
    const { url } = await presignDownload(key);
    documents.delete(key);
    expect((await send(url, { method: 'GET' })).status).toBe(404);
  });

  it('answers 404 to ids that are not ids, whatever the signature', async () => {
    for (const path of [`/uploads/${ORG}/..`, `/uploads/${ORG}/%2e%2e%2fsecret`, `/uploads/ORG_UPPER/doc_a`, `/uploads/${ORG}/doc-dash`]) {
      const answer = await send(`${app.origin}${path}?expires=9999999999&signature=${'0'.repeat(64)}`, { method: 'GET' });
      expect(answer.status, path).toBe(404);
    }
  });

  it('answers 405 with Allow to other methods', async () => {
    for (const method of ['POST', 'DELETE', 'PATCH']) {
      const answer = await send(`${app.origin}/uploads/${ORG}/doc_a`, { method, body: [] });
      expect(answer.status, method).toBe(405);
      expect(answer.headers.allow).toBe('GET, HEAD, PUT');
      expect(json(answer).error).toBe('method_not_allowed');
    }
  });
});

describe('the local driver itself', () => {
  it('is what createStorageDriver makes for the local setting, keeping files under <dataDir>/uploads', async () => {
    const driver = await createStorageDriver({ storage: { driver: 'local' }, dataDir, publicUrl: 'https://api.example.com/' }, SECRET);
    expect(driver).toBeInstanceOf(LocalDriver);
    expect(driver.name).toBe('local');
    expect(driver.location).toBe(join(dataDir, 'uploads'));
    if (driver.name === 'local') expect(driver.filePath(`${ORG}/doc_x`)).toBe(join(dataDir, 'uploads', ORG, 'doc_x'));
  });

  it('points presigned addresses at the public URL', async () => {
    const driver = new LocalDriver({ dataDir, publicUrl: 'https://api.example.com/', secret: SECRET });
    const { url } = await driver.presignDownload(`${ORG}/doc_x`, { filename: 'a', contentType: 'text/plain', expiresInSeconds: 300, now: START });
    expect(url).toMatch(new RegExp(`^https://api\\.example\\.com/uploads/${ORG}/doc_x\\?expires=${START.getTime() / 1000 + 300}&signature=[0-9a-f]{64}$`));
  });

  it('deletes one file, and deleting it again is fine', async () => {
    const key = newDocument();
    await put(key, Buffer.from('bye'));
    await app.driver.delete(key);
    expect(await app.driver.stat(key)).toBeNull();
    await expect(app.driver.delete(key)).resolves.toBeUndefined();
  });

  it('deletes many: missing keys are not failures, malformed keys are', async () => {
    const a = newDocument();
    const b = newDocument();
    await put(a, Buffer.from('a'));
    await put(b, Buffer.from('b'));
    const result = await app.driver.deleteMany([a, `${ORG}/doc_missing`, b, '../../etc/passwd', `${ORG}/..`]);
    expect(result).toEqual({ failed: ['../../etc/passwd', `${ORG}/..`] });
    expect(await app.driver.stat(a)).toBeNull();
    expect(await app.driver.stat(b)).toBeNull();
    expect(await app.driver.deleteMany([])).toEqual({ failed: [] });
  });

  it('commits what the upload route stored by measuring it; nothing uploaded is null', async () => {
    const key = newDocument();
    expect(await app.driver.commitUpload(key)).toBeNull();
    await put(key, Buffer.from('measured'));
    expect(await app.driver.commitUpload(key)).toEqual({ size: 8 });
    expect(await app.driver.commitUpload(key)).toEqual({ size: 8 });
  });

  it('moves a staged upload (uploadPath) into place on commit, and only then', async () => {
    const key = newDocument();
    await put(key, Buffer.from('first'));
    const staged = app.driver.uploadPath(key);
    expect(dirname(staged)).toBe(dirname(app.driver.filePath(key)));
    await writeFile(staged, 'second upload');
    expect(await app.driver.stat(key)).toEqual({ size: 5 });
    expect(await app.driver.commitUpload(key)).toEqual({ size: 13 });
    expect(await readFile(app.driver.filePath(key), 'utf8')).toBe('second upload');
    await expect(stat(staged)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('deletes a staged upload with its document, one or many', async () => {
    const [one, many] = [newDocument(), newDocument()];
    for (const key of [one, many]) {
      await mkdir(dirname(app.driver.uploadPath(key)), { recursive: true });
      await writeFile(app.driver.uploadPath(key), 'staged');
    }
    await app.driver.delete(one);
    expect(await app.driver.deleteMany([many])).toEqual({ failed: [] });
    for (const key of [one, many]) await expect(stat(app.driver.uploadPath(key))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses keys that are not <id>/<id>', async () => {
    for (const key of ['org_a', 'org_a/../doc', 'org_a/doc/x', '../x', 'ORG/doc', '', 'org_a/', '/doc_a', 'org_a/doc.txt']) {
      await expect(app.driver.stat(key), key).rejects.toThrow(/Not a storage key/);
      await expect(app.driver.commitUpload(key), key).rejects.toThrow(/Not a storage key/);
      expect(() => app.driver.uploadPath(key), key).toThrow(/Not a storage key/);
      await expect(app.driver.presignUpload(key, { contentType: 'text/plain', size: 1, expiresInSeconds: 60, now: START }), key).rejects.toThrow(/Not a storage key/);
    }
  });
});

describe('memory', () => {
  it('streams a 25 MiB upload to disk without holding it in memory', async () => {
    const key = newDocument('big.bin', 'application/octet-stream');
    await put(newDocument(), randomBytes(256 * 1024)); // warm the path first
    // 16 distinct 64 KiB chunks, cycled: the client allocates nothing while it sends.
    const chunks = Array.from({ length: 16 }, () => randomBytes(64 * 1024));
    const count = MAX / (64 * 1024);
    const expected = createHash('sha256');
    for (let i = 0; i < count; i++) expected.update(chunks[i % 16]!);

    const { url, headers } = await presignUpload(key, MAX, 'application/octet-stream');
    // Received chunks are garbage once written, but V8 collects them only when it likes (their
    // memory is outside the heap), so each reading forces a full GC first: it sees memory still
    // referenced. Readings are taken by the sender every 1.6 MiB (16 in all), not on a timer, so
    // their number does not depend on speed. A route that kept the body would hold it all by the end.
    const gc = exposeGc();
    const live = () => {
      gc();
      return process.memoryUsage();
    };
    const before = live();
    const peak = { heapUsed: before.heapUsed, arrayBuffers: before.arrayBuffers, rss: before.rss };
    const sample = () => {
      const now = live();
      peak.heapUsed = Math.max(peak.heapUsed, now.heapUsed);
      peak.arrayBuffers = Math.max(peak.arrayBuffers, now.arrayBuffers);
      peak.rss = Math.max(peak.rss, now.rss);
    };
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(url, { method: 'PUT', headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      pipeline(
        Readable.from(
          (function* () {
            for (let i = 0; i < count; i++) {
              if (i > 0 && i % 25 === 0) sample();
              yield chunks[i % 16]!;
            }
          })(),
        ),
        req,
      ).catch(reject);
    });
    sample();
    expect(status).toBe(200);
    const mib = (n: number) => n / 1024 / 1024;
    const growth = {
      heapUsed: mib(peak.heapUsed - before.heapUsed),
      arrayBuffers: mib(peak.arrayBuffers - before.arrayBuffers),
      rss: mib(peak.rss - before.rss),
    };
    console.log(`25 MiB upload, peak growth of live memory: heapUsed ${growth.heapUsed.toFixed(1)} MiB, ` + `arrayBuffers ${growth.arrayBuffers.toFixed(1)} MiB, rss ${growth.rss.toFixed(1)} MiB`);
    expect(growth.heapUsed).toBeLessThan(15);
    expect(growth.arrayBuffers).toBeLessThan(12);
    expect(growth.rss).toBeLessThan(20);

    expect(await app.driver.commitUpload(key)).toEqual({ size: MAX });
    const stored = createHash('sha256');
    await pipeline(await app.driver.read(key), stored);
    expect(stored.digest('hex')).toBe(expected.digest('hex'));
  });
});

describe('the document state guards the address', () => {
  it('refuses a PUT once the document is complete, and a GET while it is pending', async () => {
    const key = newDocument();
    const pending = await presignUpload(key, 5);
    const early = await send((await app.driver.presignDownload(key, { filename: 'notes.txt', contentType: 'text/plain', expiresInSeconds: 300, now: clock })).url, { method: 'GET' });
    expect(early.status).toBe(404);
    await put(key, Buffer.from('first'));
    await presignDownload(key); // the document is now complete
    const late = await fetch(pending.url, { method: 'PUT', headers: pending.headers, body: Buffer.from('later') });
    expect(late.status).toBe(404);
    expect(await late.json()).toMatchObject({ error: 'not_found' });
  });

  it('refuses a PUT for a document that no longer exists', async () => {
    const key = newDocument();
    const upload = await presignUpload(key, 5);
    documents.delete(key);
    const response = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: Buffer.from('bytes') });
    expect(response.status).toBe(404);
  });
});

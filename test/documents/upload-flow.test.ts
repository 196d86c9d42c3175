/**
 * The whole document upload flow against the real server, on both storage drivers: createUpload,
 * the presigned PUT with exactly the returned headers, complete, downloadUrl and the bytes back,
 * list, text, delete. Once through the typed RPC client and once through plain REST.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type ApiClientError } from '../../clients/typescript/src/index.ts';
import { LocalDriver } from '../../src/storage/local-driver.ts';
import { S3Driver } from '../../src/storage/s3-driver.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { parseDisposition } from '../storage/support.ts';
import { startS3rver } from '../support/s3.ts';

const NAME = 'Bericht Über Q3 – 東京.pdf';
const BUCKET = 'documents-flow';

/** A few KiB that look like a PDF and carry every byte value (NUL, high bytes, CR/LF). */
function pdfBytes(): Buffer {
  const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  return Buffer.concat([Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1'), all, randomBytes(5000), Buffer.from('\n%%EOF\n')]);
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );

interface Setup {
  server: TestServer;
  owner: TestUser;
  org: string;
  /** Where every presigned address of the driver starts (local: the test server's /uploads/). */
  addressPrefix: string;
}

/** Registers the same flow tests for one driver; `setup` is ready once the describe's beforeAll ran. */
function flowTests(driver: 'local' | 's3', setup: () => Setup) {
  const client = (user?: TestUser) => {
    const { server } = setup();
    return createClient({ baseUrl: server.origin, ...(user ? { token: user.token } : {}), fetch: clientFetch(server) });
  };
  let slugs = 0;
  const workspace = async () => {
    const { owner, org } = setup();
    return client(owner).workspaces.create({ organizationId: org, name: `Flow ${driver}`, slug: `flow-${driver}-${++slugs}` });
  };
  const stat = (document: { organizationId: string; id: string }) => setup().server.services.storage.stat(`${document.organizationId}/${document.id}`);
  /** Checks that `url` is a presigned address of the driver under test, and answers it unchanged. */
  const presigned = (url: string) => {
    expect(url.startsWith(setup().addressPrefix), url).toBe(true);
    return url;
  };

  it(`uploads, completes, downloads, lists and deletes through the RPC client (${driver})`, async () => {
    const { owner, org } = setup();
    const ws = await workspace();
    const bytes = pdfBytes();
    const before = Date.now();

    const { document, upload } = await client(owner).documents.createUpload({ organizationId: org, workspaceId: ws.id, name: NAME, contentType: 'application/pdf', size: bytes.length });
    expect(document).toMatchObject({
      organizationId: org,
      workspaceId: ws.id,
      uploadedBy: owner.id,
      name: NAME,
      contentType: 'application/pdf',
      size: bytes.length,
      status: 'pending',
      extracted: null,
      indexedAt: null,
      chunkCount: null,
    });
    expect(document.id).toMatch(/^doc_/);
    expect(document.createdAt).toBeInstanceOf(Date);
    expect(upload.method).toBe('PUT');
    expect(upload.headers).toEqual({ 'content-type': 'application/pdf', 'content-length': String(bytes.length) });
    expect(upload.expiresAt).toBeInstanceOf(Date);
    expect(upload.expiresAt.getTime()).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 15 * 60_000);
    expect(upload.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 15 * 60_000);
    expect(await stat(document)).toBeNull();

    const put = await fetch(presigned(upload.url), { method: 'PUT', headers: upload.headers, body: bytes });
    expect(put.status, await put.text()).toBe(200);
    if (driver === 'local') expect(put.headers.get('etag')).toBeNull();

    const completed = await client(owner).documents.complete({ id: document.id });
    expect(completed).toMatchObject({ id: document.id, status: 'ready', size: bytes.length, name: NAME });
    expect(completed.createdAt).toEqual(document.createdAt);
    expect(await stat(document)).toEqual({ size: bytes.length });
    // Completing again answers the document unchanged.
    expect(await client(owner).documents.complete({ id: document.id })).toEqual(completed);
    expect(await client(owner).documents.get({ id: document.id })).toEqual(completed);

    const download = await client(owner).documents.downloadUrl({ id: document.id });
    expect(download.expiresAt).toBeInstanceOf(Date);
    expect(download.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 5 * 60_000);
    expect(download.expiresAt.getTime()).toBeGreaterThan(Date.now() + 4 * 60_000);
    const got = await fetch(presigned(download.url));
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('application/pdf');
    const disposition = parseDisposition(got.headers.get('content-disposition')!);
    expect(disposition.type).toBe('attachment');
    expect(disposition.filenameStar).toBe(NAME);
    expect(disposition.filename).toMatch(/^[\x20-\x7e]+\.pdf$/);
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);

    const page = await client(owner).documents.list({ organizationId: org, workspaceId: ws.id });
    expect(page).toEqual({ items: [completed], nextCursor: null, storage: { usedBytes: bytes.length, limitBytes: null } });
    expect(await client(owner).documents.text({ id: document.id })).toBeNull();

    expect(await client(owner).documents.delete({ id: document.id })).toEqual({ id: document.id });
    expect(await stat(document)).toBeNull();
    expect((await fetch(presigned(download.url))).status).toBe(404);
    expect(await failure(client(owner).documents.get({ id: document.id }))).toMatchObject({ status: 404, code: 'NOT_FOUND', defined: true });
    expect(await client(owner).documents.list({ organizationId: org, workspaceId: ws.id })).toEqual({ items: [], nextCursor: null, storage: { usedBytes: 0, limitBytes: null } });
  });

  it(`does the same through plain REST with fetch (${driver})`, async () => {
    const { server, owner, org } = setup();
    const ws = await workspace();
    const bytes = pdfBytes();
    const json = { ...owner.headers, 'content-type': 'application/json' };

    const created = await server.fetch('/api/v1/documents', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ organizationId: org, workspaceId: ws.id, name: NAME, contentType: 'application/pdf', size: bytes.length }),
    });
    expect(created.status).toBe(200);
    const { document, upload } = await created.json();
    expect(document).toMatchObject({ status: 'pending', size: bytes.length, name: NAME, uploadedBy: owner.id });
    expect(typeof document.createdAt).toBe('string');
    expect(new Date(document.createdAt).toISOString()).toBe(document.createdAt);
    expect(typeof upload.expiresAt).toBe('string');

    const put = await fetch(presigned(upload.url), { method: 'PUT', headers: upload.headers, body: bytes });
    expect(put.status, await put.text()).toBe(200);

    const completed = await server.fetch(`/api/v1/documents/${document.id}/complete`, { method: 'POST', headers: owner.headers });
    expect(completed.status).toBe(200);
    const ready = await completed.json();
    expect(ready).toMatchObject({ id: document.id, status: 'ready', size: bytes.length });

    const got = await server.fetch(`/api/v1/documents/${document.id}`, { headers: owner.headers });
    expect(await got.json()).toEqual(ready);

    const address = await server.fetch(`/api/v1/documents/${document.id}/download-url`, { headers: owner.headers });
    expect(address.status).toBe(200);
    const download = await address.json();
    expect(Object.keys(download).sort()).toEqual(['expiresAt', 'url']);
    const file = await fetch(presigned(download.url));
    expect(file.status).toBe(200);
    expect(parseDisposition(file.headers.get('content-disposition')!).filenameStar).toBe(NAME);
    expect(Buffer.from(await file.arrayBuffer()).equals(bytes)).toBe(true);

    const list = await server.fetch(`/api/v1/workspaces/${ws.id}/documents?organizationId=${org}&limit=10`, { headers: owner.headers });
    expect(await list.json()).toEqual({ items: [ready], nextCursor: null, storage: { usedBytes: bytes.length, limitBytes: null } });

    const text = await server.fetch(`/api/v1/documents/${document.id}/text`, { headers: owner.headers });
    expect(text.status).toBe(200);
    expect(text.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await text.json()).toBeNull();

    const deleted = await server.fetch(`/api/v1/documents/${document.id}`, { method: 'DELETE', headers: owner.headers });
    expect(await deleted.json()).toEqual({ id: document.id });
    expect(await stat(document)).toBeNull();
    expect((await fetch(presigned(download.url))).status).toBe(404);
    expect((await server.fetch(`/api/v1/documents/${document.id}`, { headers: owner.headers })).status).toBe(404);
  });

  it(`rewrites size from what the driver measured, not from the declaration (${driver})`, async () => {
    const { owner, org } = setup();
    const ws = await workspace();
    const bytes = Buffer.from('%PDF-1.7\nshorter than declared\n');
    const { document, upload } = await client(owner).documents.createUpload({ organizationId: org, workspaceId: ws.id, name: 'short.pdf', contentType: 'application/pdf', size: 4096 });
    // Fewer bytes than declared: the local route takes the signed size as an upper bound. (Real S3
    // signs content-length and would refuse this PUT; s3rver checks no signatures.)
    const put = await fetch(presigned(upload.url), { method: 'PUT', headers: { 'content-type': 'application/pdf' }, body: bytes });
    expect(put.status, await put.text()).toBe(200);
    expect(await client(owner).documents.list({ organizationId: org, workspaceId: ws.id })).toMatchObject({ storage: { usedBytes: 4096 } });
    const completed = await client(owner).documents.complete({ id: document.id });
    expect(completed).toMatchObject({ status: 'ready', size: bytes.length });
    expect(await client(owner).documents.list({ organizationId: org, workspaceId: ws.id })).toMatchObject({ storage: { usedBytes: bytes.length } });
  });

  it(`refuses and deletes a stored object larger than declared (${driver})`, async () => {
    const { server, owner, org } = setup();
    const ws = await workspace();
    const { document } = await client(owner).documents.createUpload({ organizationId: org, workspaceId: ws.id, name: 'big.txt', contentType: 'text/plain', size: 10 });
    // Put the object straight into storage, past whatever the presigned address would allow.
    const key = `${document.organizationId}/${document.id}`;
    const storage = server.services.storage;
    const body = Buffer.alloc(11, 'x');
    if (storage instanceof LocalDriver) {
      await mkdir(dirname(storage.filePath(key)), { recursive: true });
      await writeFile(storage.filePath(key), body);
    } else if (storage instanceof S3Driver) {
      const { url } = await storage.presignUpload(key, { contentType: 'text/plain', size: body.length, expiresInSeconds: 60, now: new Date() });
      expect((await fetch(url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body })).status).toBe(200);
    }
    // On S3 the PUT lands on a staging key: the final key holds nothing until complete commits it.
    expect(await stat(document)).toEqual(storage instanceof S3Driver ? null : { size: 11 });
    expect(await failure(client(owner).documents.complete({ id: document.id }))).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE', defined: true, data: { maxBytes: 10 } });
    expect(await stat(document)).toBeNull();
    expect(await client(owner).documents.get({ id: document.id })).toMatchObject({ status: 'pending', size: 10 });
    expect(await failure(client(owner).documents.complete({ id: document.id }))).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED' });
  });
}

describe('upload flow on the local driver', () => {
  let setup: Setup;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-documents-'));
    const server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000', DATA_DIR: dataDir } });
    const owner = await createUser(server.db);
    const org = await addMembership(server.db, owner, 'owner');
    setup = { server, owner, org, addressPrefix: `${server.origin}/uploads/` };
  });
  afterAll(async () => {
    await setup?.server.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('uses the local driver, which keeps the bytes under DATA_DIR/uploads', () => {
    expect(setup.server.services.storage).toBeInstanceOf(LocalDriver);
    expect(setup.server.services.storage.location).toBe(join(dataDir, 'uploads'));
  });

  flowTests('local', () => setup);
});

describe('upload flow on the S3 driver (s3rver)', () => {
  let setup: Setup;
  let s3: S3rver;
  let dir: string;

  beforeAll(async () => {
    const running = await startS3rver('workspace-api-documents-s3-', BUCKET);
    ({ s3, dir } = running);
    const { port } = running;
    const server = await startTestServer({
      env: {
        RATE_LIMIT_PER_MINUTE: '100000',
        DATA_DIR: dir,
        STORAGE_DRIVER: 's3',
        S3_BUCKET: BUCKET,
        S3_ENDPOINT: `http://127.0.0.1:${port}`,
        S3_FORCE_PATH_STYLE: 'true',
        S3_ACCESS_KEY_ID: 'S3RVER',
        S3_SECRET_ACCESS_KEY: 'S3RVER',
        S3_REGION: 'us-east-1',
      },
    });
    const owner = await createUser(server.db);
    const org = await addMembership(server.db, owner, 'owner');
    setup = { server, owner, org, addressPrefix: `http://127.0.0.1:${port}/${BUCKET}/` };
  });
  afterAll(async () => {
    const storage = setup?.server.services.storage;
    await setup?.server.close();
    if (storage instanceof S3Driver) storage.client.destroy();
    await s3?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('uses the S3 driver', () => {
    expect(setup.server.services.storage).toBeInstanceOf(S3Driver);
    expect(setup.server.services.storage.location).toBe(BUCKET);
  });

  it('has no /uploads routes', async () => {
    const { server, owner, org } = setup;
    const ws = await createClient({ baseUrl: server.origin, token: owner.token, fetch: clientFetch(server) }).workspaces.create({ organizationId: org, name: 'No uploads', slug: 'no-uploads' });
    const { document } = await createClient({ baseUrl: server.origin, token: owner.token, fetch: clientFetch(server) }).documents.createUpload({
      organizationId: org,
      workspaceId: ws.id,
      name: 'a.txt',
      contentType: 'text/plain',
      size: 5,
    });
    const path = `/uploads/${org}/${document.id}`;
    const signature = '0'.repeat(64);
    const put = await server.fetch(`${path}?expires=9999999999&size=5&signature=${signature}`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(put.status).toBe(404);
    expect((await server.fetch(`${path}?expires=9999999999&signature=${signature}`)).status).toBe(404);
    expect((await server.fetch(`${path}?expires=9999999999&signature=${signature}`, { method: 'HEAD' })).status).toBe(404);
    expect(await server.services.storage.stat(`${org}/${document.id}`)).toBeNull();
  });

  flowTests('s3', () => setup);
});

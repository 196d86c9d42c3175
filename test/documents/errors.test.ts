/**
 * Every error the documents procedures declare, against the real server (local driver,
 * MAX_UPLOAD_BYTES=1024), plus the storage quota while billing is configured (a plans override
 * whose limits the tests change as they go).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type ApiClientError } from '../../clients/typescript/src/index.ts';
import type { PlanLookup } from '../../src/credits/plans.ts';
import { LocalDriver } from '../../src/storage/local-driver.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

const MAX = 1024;
const CONTENT_TYPES = [
  'text/plain',
  'text/markdown',
  'text/csv',
  'text/html',
  'application/json',
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'image/png',
  'image/jpeg',
] as const;

let server: TestServer;
let dataDir: string;
let driver: LocalDriver;
let owner: TestUser, stranger: TestUser;
let org: string, otherOrg: string;
let ws: string, foreignWs: string;
// Organizations listed here are billed on free with this many storage bytes; all others are unbilled.
const storageLimits = new Map<string, number>();
// Runs inside the plan lookup, i.e. after the handler's own checks and before its write: a way to
// make something happen "meanwhile" deterministically.
let meanwhile: (() => Promise<void>) | undefined;
const plans: PlanLookup = {
  limitsFor: async (id) => {
    const hook = meanwhile;
    meanwhile = undefined;
    await hook?.();
    const storageBytes = storageLimits.get(id);
    return storageBytes === undefined ? null : { plan: 'free', limits: { workspaces: 3, members: 5, aiCredits: 200, storageBytes } };
  },
};

const client = (user?: TestUser) => createClient({ baseUrl: server.origin, ...(user ? { token: user.token } : {}), fetch: clientFetch(server) });
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );
const key = (document: { organizationId: string; id: string }) => `${document.organizationId}/${document.id}`;

/** PUT through the presigned address with exactly the headers it came with. */
async function putBytes(upload: { url: string; headers: Record<string, string> }, bytes: Buffer): Promise<void> {
  expect(upload.url.startsWith(`${server.origin}/uploads/`)).toBe(true);
  const response = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes });
  expect(response.status, await response.text()).toBe(200);
}

async function uploaded(organizationId: string, workspaceId: string, size: number, declared = size) {
  const { document, upload } = await client(owner).documents.createUpload({ organizationId, workspaceId, name: 'file.txt', contentType: 'text/plain', size: declared });
  await putBytes({ url: upload.url, headers: { ...upload.headers, 'content-length': String(size) } }, Buffer.alloc(size, 'a'));
  return document;
}

/** A new organization owned by `owner`, billed with `storageBytes`, with one workspace. */
async function billedWorkspace(storageBytes: number): Promise<{ org: string; ws: string }> {
  const billed = await addMembership(server.db, owner, 'owner');
  storageLimits.set(billed, storageBytes);
  const workspace = await client(owner).workspaces.create({ organizationId: billed, name: 'Billed', slug: 'billed' });
  return { org: billed, ws: workspace.id };
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-documents-'));
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000', DATA_DIR: dataDir, MAX_UPLOAD_BYTES: String(MAX) }, overrides: { plans } });
  if (!(server.services.storage instanceof LocalDriver)) throw new Error('expected the local driver');
  driver = server.services.storage;
  [owner, stranger] = await Promise.all([createUser(server.db), createUser(server.db)]);
  org = await addMembership(server.db, owner, 'owner');
  otherOrg = await addMembership(server.db, stranger, 'owner');
  ws = (await client(owner).workspaces.create({ organizationId: org, name: 'Errors', slug: 'errors' })).id;
  foreignWs = (await client(stranger).workspaces.create({ organizationId: otherOrg, name: 'Theirs', slug: 'theirs' })).id;
});
afterAll(async () => {
  await server?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('documents.createUpload input', () => {
  const base = () => ({ organizationId: org, workspaceId: ws, name: 'report.pdf', contentType: 'application/pdf' as (typeof CONTENT_TYPES)[number], size: 10 });

  it('accepts every DOCUMENT_CONTENT_TYPES value', async () => {
    for (const contentType of CONTENT_TYPES) {
      const { document, upload } = await client(owner).documents.createUpload({ ...base(), contentType });
      expect(document.contentType).toBe(contentType);
      expect(upload.headers['content-type']).toBe(contentType);
    }
  });

  it('answers 400 (never 415) for a content type outside DOCUMENT_CONTENT_TYPES, over RPC and REST', async () => {
    const before = await client(owner).documents.list({ organizationId: org, workspaceId: ws, limit: 200 });
    for (const contentType of ['application/x-msdownload', 'application/pdf; charset=binary', 'APPLICATION/PDF', 'image/gif', 'text/plain ', '']) {
      const error = await failure(client(owner).documents.createUpload({ ...base(), contentType: contentType as 'application/pdf' }));
      expect(error, contentType).toMatchObject({ status: 400, code: 'BAD_REQUEST', defined: true });
      expect(
        (error.data as { issues: { path: unknown[] }[] }).issues.map((issue) => issue.path),
        contentType,
      ).toEqual([['contentType']]);

      const response = await server.fetch('/api/v1/documents', { method: 'POST', headers: { ...owner.headers, 'content-type': 'application/json' }, body: JSON.stringify({ ...base(), contentType }) });
      expect(response.status, contentType).toBe(400);
      expect(await response.json()).toMatchObject({ defined: true, code: 'BAD_REQUEST', status: 400, data: { issues: [{ path: ['contentType'] }] } });
    }
    expect((await client(owner).documents.list({ organizationId: org, workspaceId: ws, limit: 200 })).items.length).toBe(before.items.length);
  });

  it('answers 400 for an empty name, a name over 200 characters, and control characters', async () => {
    for (const name of ['', 'x'.repeat(201), '東'.repeat(201)]) {
      const error = await failure(client(owner).documents.createUpload({ ...base(), name }));
      expect(error).toMatchObject({ status: 400, code: 'BAD_REQUEST', data: { issues: [{ path: ['name'] }] } });
    }
    for (const name of ['line\nbreak.pdf', 'tab\there.pdf', 'nul\u0000.pdf', 'cr\r.pdf', 'del\u007f.pdf', 'c1\u0085.pdf', 'escape\u001b[31m.pdf', 'sep\u2028.pdf']) {
      const error = await failure(client(owner).documents.createUpload({ ...base(), name }));
      expect(error, JSON.stringify(name)).toMatchObject({ status: 400, code: 'BAD_REQUEST', data: { issues: [{ path: ['name'], params: { reason: 'control_characters' } }] } });
    }
    // The bounds themselves are fine: 200 characters (also outside the BMP), one character.
    for (const name of ['x'.repeat(200), '東'.repeat(200), 'a']) {
      expect((await client(owner).documents.createUpload({ ...base(), name })).document.name).toBe(name);
    }
  });

  it('answers 400 for a size that is not a byte count', async () => {
    for (const size of [-1, 1.5]) {
      expect(await failure(client(owner).documents.createUpload({ ...base(), size }))).toMatchObject({ status: 400, data: { issues: [{ path: ['size'] }] } });
    }
    const response = await server.fetch('/api/v1/documents', { method: 'POST', headers: { ...owner.headers, 'content-type': 'application/json' }, body: JSON.stringify({ ...base(), size: '10' }) });
    expect(response.status).toBe(400);
  });

  it('answers 413 PAYLOAD_TOO_LARGE with data.maxBytes above MAX_UPLOAD_BYTES; exactly MAX_UPLOAD_BYTES and an empty file go through', async () => {
    const error = await failure(client(owner).documents.createUpload({ ...base(), size: MAX + 1 }));
    expect(error).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE', defined: true, data: { maxBytes: MAX } });
    const response = await server.fetch('/api/v1/documents', { method: 'POST', headers: { ...owner.headers, 'content-type': 'application/json' }, body: JSON.stringify({ ...base(), size: 10 ** 12 }) });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ defined: true, code: 'PAYLOAD_TOO_LARGE', status: 413, data: { maxBytes: MAX } });

    for (const size of [MAX, 0]) {
      const document = await uploaded(org, ws, size);
      expect(await client(owner).documents.complete({ id: document.id })).toMatchObject({ status: 'ready', size });
    }
  });

  it('answers 404 for an unknown workspace and for a workspace of another organization, in createUpload and list', async () => {
    for (const workspaceId of ['ws_aaaaaaaaaaaaaaaaaaaaaaaa', foreignWs]) {
      expect(await failure(client(owner).documents.createUpload({ ...base(), workspaceId }))).toMatchObject({ status: 404, code: 'NOT_FOUND', defined: true });
      expect(await failure(client(owner).documents.list({ organizationId: org, workspaceId }))).toMatchObject({ status: 404, code: 'NOT_FOUND', defined: true });
      const rest = await server.fetch(`/api/v1/workspaces/${workspaceId}/documents?organizationId=${org}`, { headers: owner.headers });
      expect(rest.status).toBe(404);
    }
    const [row] = await server.db.sql`select count(*)::int as count from documents where workspace_id = ${foreignWs}`;
    expect(row!.count).toBe(0);
  });
});

describe('documents.complete and downloadUrl preconditions', () => {
  it('answers 412 for complete before any upload, and the document stays pending', async () => {
    const { document } = await client(owner).documents.createUpload({ organizationId: org, workspaceId: ws, name: 'never.txt', contentType: 'text/plain', size: 5 });
    expect(await failure(client(owner).documents.complete({ id: document.id }))).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED', defined: true });
    const rest = await server.fetch(`/api/v1/documents/${document.id}/complete`, { method: 'POST', headers: owner.headers });
    expect(rest.status).toBe(412);
    expect(await rest.json()).toMatchObject({ defined: true, code: 'PRECONDITION_FAILED', status: 412 });
    expect(await client(owner).documents.get({ id: document.id })).toEqual(document);
  });

  it('answers 412 for downloadUrl before complete, even once the bytes arrived', async () => {
    const { document, upload } = await client(owner).documents.createUpload({ organizationId: org, workspaceId: ws, name: 'early.txt', contentType: 'text/plain', size: 5 });
    expect(await failure(client(owner).documents.downloadUrl({ id: document.id }))).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED', defined: true });
    await putBytes(upload, Buffer.from('hello'));
    expect(await failure(client(owner).documents.downloadUrl({ id: document.id }))).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED' });
    await client(owner).documents.complete({ id: document.id });
    expect((await client(owner).documents.downloadUrl({ id: document.id })).url).toContain(`/uploads/${org}/${document.id}?`);
  });

  it('answers 413 when more bytes were stored than declared, and deletes the object', async () => {
    const { document } = await client(owner).documents.createUpload({ organizationId: org, workspaceId: ws, name: 'grown.txt', contentType: 'text/plain', size: 100 });
    // Written straight into the driver's directory: the /uploads route itself never stores more than declared.
    const file = driver.filePath(key(document));
    expect(file).toBe(join(dataDir, 'uploads', org, document.id));
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, Buffer.alloc(101, 'b'));
    const error = await failure(client(owner).documents.complete({ id: document.id }));
    expect(error).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE', defined: true, data: { maxBytes: 100 } });
    expect(await driver.stat(key(document))).toBeNull();
    expect(await client(owner).documents.get({ id: document.id })).toMatchObject({ status: 'pending', size: 100 });
  });

  it('caps the allowed size by MAX_UPLOAD_BYTES when the limit went down after createUpload', async () => {
    const document = await uploaded(org, ws, 1000);
    // The service restarts on the same data with a lower MAX_UPLOAD_BYTES before complete.
    const restarted = await startTestServer({ db: server.db, env: { DATA_DIR: dataDir, MAX_UPLOAD_BYTES: '512' } });
    try {
      const later = createClient({ baseUrl: restarted.origin, token: owner.token, fetch: clientFetch(restarted) });
      expect(await failure(later.documents.complete({ id: document.id }))).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE', data: { maxBytes: 512 } });
      expect(await driver.stat(key(document))).toBeNull();
    } finally {
      await restarted.close();
    }
  });
});

describe('unknown ids', () => {
  it('answers 404 for get, complete, downloadUrl, text and delete of an unknown id, over RPC and REST', async () => {
    const id = 'doc_aaaaaaaaaaaaaaaaaaaaaaaa';
    const calls = [
      () => client(owner).documents.get({ id }),
      () => client(owner).documents.complete({ id }),
      () => client(owner).documents.downloadUrl({ id }),
      () => client(owner).documents.text({ id }),
      () => client(owner).documents.delete({ id }),
    ];
    for (const call of calls) expect(await failure(call())).toMatchObject({ status: 404, code: 'NOT_FOUND', defined: true });
    const rest: [string, string][] = [
      ['GET', ''],
      ['POST', '/complete'],
      ['GET', '/download-url'],
      ['GET', '/text'],
      ['DELETE', ''],
    ];
    for (const [method, suffix] of rest) {
      const response = await server.fetch(`/api/v1/documents/${id}${suffix}`, { method, headers: owner.headers });
      expect(response.status, `${method} ${suffix}`).toBe(404);
      expect(await response.json()).toMatchObject({ defined: true, code: 'NOT_FOUND', status: 404 });
    }
  });
});

describe('storage quota while billing is configured', () => {
  it('answers 403 LIMIT_REACHED (storageBytes) for a declared size above the remaining bytes', async () => {
    const billed = await billedWorkspace(1000);
    const input = { organizationId: billed.org, workspaceId: billed.ws, name: 'q.txt', contentType: 'text/plain' as const };
    await client(owner).documents.createUpload({ ...input, size: 600 });
    const error = await failure(client(owner).documents.createUpload({ ...input, size: 401 }));
    expect(error).toMatchObject({ status: 403, code: 'LIMIT_REACHED', defined: true, data: { kind: 'storageBytes', limit: 1000, plan: 'free' } });
    const rest = await server.fetch('/api/v1/documents', { method: 'POST', headers: { ...owner.headers, 'content-type': 'application/json' }, body: JSON.stringify({ ...input, size: 401 }) });
    expect(rest.status).toBe(403);
    expect(await rest.json()).toMatchObject({ defined: true, code: 'LIMIT_REACHED', status: 403, data: { kind: 'storageBytes', limit: 1000, plan: 'free' } });
    // Above MAX_UPLOAD_BYTES is 413 first, whatever the plan.
    expect(await failure(client(owner).documents.createUpload({ ...input, size: MAX + 1 }))).toMatchObject({ status: 413 });

    // Exactly the remaining bytes fit; then nothing does.
    const last = await client(owner).documents.createUpload({ ...input, size: 400 });
    expect(await failure(client(owner).documents.createUpload({ ...input, size: 1 }))).toMatchObject({ status: 403, code: 'LIMIT_REACHED' });
    const page = await client(owner).documents.list({ organizationId: billed.org, workspaceId: billed.ws });
    expect(page.items.length).toBe(2);
    expect(page.storage).toEqual({ usedBytes: 1000, limitBytes: 1000 });
    // Deleting frees the space again.
    await client(owner).documents.delete({ id: last.document.id });
    expect((await client(owner).documents.createUpload({ ...input, size: 400 })).document.size).toBe(400);
  });

  // With the quota checked on createUpload (pending documents count with their declared size)
  // and complete refusing anything larger than declared, complete's re-check can only trip when
  // the limit itself went down in between: a plan downgrade while an upload is in flight.
  it('re-checks the quota on complete against the real size', async () => {
    const billed = await billedWorkspace(1000);
    const document = await uploaded(billed.org, billed.ws, 600);
    storageLimits.set(billed.org, 500);
    const error = await failure(client(owner).documents.complete({ id: document.id }));
    expect(error).toMatchObject({ status: 403, code: 'LIMIT_REACHED', defined: true, data: { kind: 'storageBytes', limit: 500, plan: 'free' } });
    expect(await client(owner).documents.get({ id: document.id })).toMatchObject({ status: 'pending', size: 600 });
    expect(await driver.stat(key(document))).toEqual({ size: 600 });

    storageLimits.set(billed.org, 1000);
    expect(await client(owner).documents.complete({ id: document.id })).toMatchObject({ status: 'ready', size: 600 });

    // The real size counts, not the declared one: 300 bytes of a declared 400 fit a limit of 900.
    const smaller = await uploaded(billed.org, billed.ws, 300, 400);
    storageLimits.set(billed.org, 900);
    expect(await client(owner).documents.complete({ id: smaller.id })).toMatchObject({ status: 'ready', size: 300 });
    expect((await client(owner).documents.list({ organizationId: billed.org, workspaceId: billed.ws })).storage).toEqual({ usedBytes: 900, limitBytes: 900 });
  });

  it('counts every workspace of the organization', async () => {
    const billed = await billedWorkspace(1000);
    const second = await client(owner).workspaces.create({ organizationId: billed.org, name: 'Second', slug: 'second' });
    await client(owner).documents.createUpload({ organizationId: billed.org, workspaceId: billed.ws, name: 'a.txt', contentType: 'text/plain', size: 700 });
    expect(await failure(client(owner).documents.createUpload({ organizationId: billed.org, workspaceId: second.id, name: 'b.txt', contentType: 'text/plain', size: 301 }))).toMatchObject({
      status: 403,
      code: 'LIMIT_REACHED',
      data: { kind: 'storageBytes', limit: 1000 },
    });
    // storage in list is the workspace's own usage; the limit is the organization's.
    expect((await client(owner).documents.list({ organizationId: billed.org, workspaceId: second.id })).storage).toEqual({ usedBytes: 0, limitBytes: 1000 });
  });
});

describe('rows that go away meanwhile', () => {
  it('answers 404, not 500, when the document is deleted while complete runs', async () => {
    const document = await uploaded(org, ws, 5);
    meanwhile = async () => {
      await client(owner).documents.delete({ id: document.id });
    };
    expect(await failure(client(owner).documents.complete({ id: document.id }))).toMatchObject({ status: 404, code: 'NOT_FOUND', defined: true });
    expect(await driver.stat(key(document))).toBeNull();
  });

  it('answers 404, not 500, when the workspace is deleted while createUpload runs', async () => {
    const gone = await client(owner).workspaces.create({ organizationId: org, name: 'Gone', slug: 'gone' });
    meanwhile = async () => {
      await client(owner).workspaces.delete({ id: gone.id });
    };
    expect(await failure(client(owner).documents.createUpload({ organizationId: org, workspaceId: gone.id, name: 'late.txt', contentType: 'text/plain', size: 5 }))).toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
      defined: true,
    });
    const [row] = await server.db.sql`select count(*)::int as count from documents where workspace_id = ${gone.id}`;
    expect(row!.count).toBe(0);
  });
});

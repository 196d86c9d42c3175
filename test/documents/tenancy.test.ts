/**
 * Who may call the documents procedures: 401 without a session, 403 across tenants for every
 * by-id procedure (the tenant comes from the row) with nothing changed, and the role matrix
 * (document read, create and delete for every role).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type ApiClientError } from '../../clients/typescript/src/index.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

let server: TestServer;
let dataDir: string;
let owner: TestUser, admin: TestUser, member: TestUser, stranger: TestUser, outsider: TestUser, expired: TestUser;
let org: string, otherOrg: string, ws: string, otherWs: string;

const client = (user?: TestUser) => createClient({ baseUrl: server.origin, ...(user ? { token: user.token } : {}), fetch: clientFetch(server) });
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );
const key = (document: { organizationId: string; id: string }) => `${document.organizationId}/${document.id}`;

/** A document of `ws` uploaded by `user`; completed unless `complete` is false. */
async function document(user: TestUser, bytes: Buffer, complete = true) {
  const { document, upload } = await client(user).documents.createUpload({ organizationId: org, workspaceId: ws, name: 'notes.md', contentType: 'text/markdown', size: bytes.length });
  const put = await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: bytes });
  expect(put.status, await put.text()).toBe(200);
  return complete ? client(user).documents.complete({ id: document.id }) : document;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-documents-'));
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000', DATA_DIR: dataDir } });
  [owner, admin, member, stranger, outsider, expired] = await Promise.all([
    createUser(server.db),
    createUser(server.db),
    createUser(server.db),
    createUser(server.db),
    createUser(server.db),
    createUser(server.db, { now: new Date(Date.now() - 60 * 24 * 3600_000) }),
  ]);
  org = await addMembership(server.db, owner, 'owner');
  await addMembership(server.db, admin, 'admin', org);
  await addMembership(server.db, member, 'member', org);
  await addMembership(server.db, expired, 'owner', org);
  otherOrg = await addMembership(server.db, stranger, 'owner');
  ws = (await client(owner).workspaces.create({ organizationId: org, name: 'Ours', slug: 'ours' })).id;
  otherWs = (await client(stranger).workspaces.create({ organizationId: otherOrg, name: 'Theirs', slug: 'theirs' })).id;
});
afterAll(async () => {
  await server?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('documents across tenants', () => {
  it("answers 403 for get, complete, downloadUrl, text and delete of another organization's document, changing nothing", async () => {
    const bytes = Buffer.from('# Ours\n\nNot yours.\n');
    const ready = await document(owner, bytes);
    const pending = await document(owner, bytes, false);

    for (const intruder of [stranger, outsider]) {
      const them = client(intruder);
      const calls: [string, () => Promise<unknown>][] = [
        ['get', () => them.documents.get({ id: ready.id })],
        ['complete', () => them.documents.complete({ id: pending.id })],
        ['complete (ready)', () => them.documents.complete({ id: ready.id })],
        ['downloadUrl', () => them.documents.downloadUrl({ id: ready.id })],
        ['text', () => them.documents.text({ id: ready.id })],
        ['delete', () => them.documents.delete({ id: ready.id })],
        ['delete (pending)', () => them.documents.delete({ id: pending.id })],
      ];
      for (const [name, call] of calls) {
        expect(await failure(call()), name).toMatchObject({ status: 403, code: 'FORBIDDEN', defined: true, message: 'You do not have access to this resource.' });
      }
      const rest: [string, string, string][] = [
        ['GET', ready.id, ''],
        ['POST', pending.id, '/complete'],
        ['GET', ready.id, '/download-url'],
        ['GET', ready.id, '/text'],
        ['DELETE', ready.id, ''],
        ['DELETE', pending.id, ''],
      ];
      for (const [method, id, suffix] of rest) {
        const response = await server.fetch(`/api/v1/documents/${id}${suffix}`, { method, headers: intruder.headers });
        expect(response.status, `${method} ${suffix}`).toBe(403);
        expect(await response.json()).toEqual({ defined: true, code: 'FORBIDDEN', status: 403, message: 'You do not have access to this resource.' });
      }
    }

    // Rows, objects and the pending state are exactly as before.
    expect(await client(owner).documents.get({ id: ready.id })).toEqual(ready);
    expect(await client(owner).documents.get({ id: pending.id })).toEqual(pending);
    expect(await server.services.storage.stat(key(ready))).toEqual({ size: bytes.length });
    // The pending document's bytes are still its staged upload, which complete has not committed.
    expect(await server.services.storage.commitUpload(key(pending))).toEqual({ size: bytes.length });
    const download = await client(owner).documents.downloadUrl({ id: ready.id });
    expect(Buffer.from(await (await fetch(download.url)).arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('answers 403 for list and createUpload in an organization the caller is not a member of, creating nothing', async () => {
    for (const intruder of [stranger, outsider]) {
      expect(await failure(client(intruder).documents.list({ organizationId: org, workspaceId: ws }))).toMatchObject({ status: 403, code: 'FORBIDDEN' });
      expect(await failure(client(intruder).documents.createUpload({ organizationId: org, workspaceId: ws, name: 'x.txt', contentType: 'text/plain', size: 1 }))).toMatchObject({
        status: 403,
        code: 'FORBIDDEN',
      });
    }
    // Naming their own organization does not reach our workspace either.
    expect(await failure(client(stranger).documents.createUpload({ organizationId: otherOrg, workspaceId: ws, name: 'x.txt', contentType: 'text/plain', size: 1 }))).toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
    });
    expect(await failure(client(stranger).documents.list({ organizationId: otherOrg, workspaceId: ws }))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    const [row] = await server.db.sql`select count(*)::int as count from documents where uploaded_by in (${stranger.id}, ${outsider.id})`;
    expect(row!.count).toBe(0);
    // And they see only their own workspace's (empty) list.
    expect(await client(stranger).documents.list({ organizationId: otherOrg, workspaceId: otherWs })).toEqual({ items: [], nextCursor: null, storage: { usedBytes: 0, limitBytes: null } });
  });
});

describe('roles', () => {
  it('lets owners, admins and members read, create and delete documents', async () => {
    for (const user of [owner, admin, member]) {
      const bytes = Buffer.from(`written by ${user.id}\n`);
      const mine = await document(user, bytes);
      expect(mine).toMatchObject({ uploadedBy: user.id, status: 'ready', size: bytes.length });
      expect(await client(user).documents.get({ id: mine.id })).toEqual(mine);
      expect((await client(user).documents.list({ organizationId: org, workspaceId: ws, limit: 200 })).items.map((d) => d.id)).toContain(mine.id);
      expect((await client(user).documents.downloadUrl({ id: mine.id })).url).toContain(mine.id);
      expect(await client(user).documents.text({ id: mine.id })).toBeNull();
      expect(await client(user).documents.delete({ id: mine.id })).toEqual({ id: mine.id });
    }
  });

  it('lets a member read and delete a document someone else uploaded', async () => {
    const owners = await document(owner, Buffer.from('the owner wrote this'));
    expect(await client(member).documents.get({ id: owners.id })).toEqual(owners);
    expect(await client(member).documents.delete({ id: owners.id })).toEqual({ id: owners.id });
    expect(await server.services.storage.stat(key(owners))).toBeNull();
  });

  it('lets a member complete an upload someone else started', async () => {
    const started = await document(admin, Buffer.from('half done'), false);
    expect(await client(member).documents.complete({ id: started.id })).toMatchObject({ status: 'ready', uploadedBy: admin.id });
  });
});

describe('should require access', () => {
  const calls = (c: ReturnType<typeof client>, id: string): [string, () => Promise<unknown>][] => [
    ['list', () => c.documents.list({ organizationId: org, workspaceId: ws })],
    ['search', () => c.documents.search({ workspaceId: ws, query: 'anything', limit: 10 })],
    ['get', () => c.documents.get({ id })],
    ['createUpload', () => c.documents.createUpload({ organizationId: org, workspaceId: ws, name: 'x.txt', contentType: 'text/plain', size: 1 })],
    ['complete', () => c.documents.complete({ id })],
    ['downloadUrl', () => c.documents.downloadUrl({ id })],
    ['text', () => c.documents.text({ id })],
    ['delete', () => c.documents.delete({ id })],
  ];

  it('answers 401 to every documents procedure without a session, over RPC and REST, changing nothing', async () => {
    const kept = await document(owner, Buffer.from('still here'));
    const [before] = await server.db.sql`select count(*)::int as count from documents`;
    const anonymous = client();
    const badToken = createClient({ baseUrl: server.origin, token: 'not-a-session-token', fetch: clientFetch(server) });
    const stale = client(expired);
    for (const [who, c] of [
      ['no session', anonymous],
      ['bad token', badToken],
      ['expired session', stale],
    ] as const) {
      for (const [name, call] of calls(c, kept.id)) {
        expect(await failure(call()), `${who}: ${name}`).toMatchObject({ status: 401, code: 'UNAUTHORIZED', message: 'You must be signed in.' });
      }
    }
    const rest: [string, string, unknown?][] = [
      ['GET', `/api/v1/workspaces/${ws}/documents?organizationId=${org}`],
      ['POST', `/api/v1/workspaces/${ws}/documents/search`, { query: 'anything' }],
      ['GET', `/api/v1/documents/${kept.id}`],
      ['POST', '/api/v1/documents', { organizationId: org, workspaceId: ws, name: 'x.txt', contentType: 'text/plain', size: 1 }],
      ['POST', `/api/v1/documents/${kept.id}/complete`],
      ['GET', `/api/v1/documents/${kept.id}/download-url`],
      ['GET', `/api/v1/documents/${kept.id}/text`],
      ['DELETE', `/api/v1/documents/${kept.id}`],
    ];
    for (const [method, path, body] of rest) {
      const response = await server.fetch(path, { method, ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}) });
      expect(response.status, `${method} ${path}`).toBe(401);
      expect(await response.json()).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    }
    const [after] = await server.db.sql`select count(*)::int as count from documents`;
    expect(after!.count).toBe(before!.count);
    expect(await client(owner).documents.get({ id: kept.id })).toEqual(kept);
    expect(await server.services.storage.stat(key(kept))).toEqual({ size: 10 });
  });
});

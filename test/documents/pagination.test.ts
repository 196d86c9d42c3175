/**
 * documents.list pages: newest first by (created_at, id), limit-sized pages, nextCursor null on
 * the last one, no duplicates or gaps when rows share a created_at (down to the microsecond), the
 * storage of the whole workspace on every page, and 400 for any cursor the service did not issue
 * for this workspace.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type ApiClientError } from '../../clients/typescript/src/index.ts';
import { newId } from '../../src/ids.ts';
import { encodeCursor } from '../../src/pagination/cursor.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

let server: TestServer;
let dataDir: string;
let owner: TestUser;
let org: string;
let slugs = 0;
// The service's clock: tests move it so documents made through the API get distinct created_at.
let clock = Date.now();

const client = (user?: TestUser) => createClient({ baseUrl: server.origin, ...(user ? { token: user.token } : {}), fetch: clientFetch(server) });
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );
const workspace = async () => (await client(owner).workspaces.create({ organizationId: org, name: 'Pages', slug: `pages-${++slugs}` })).id;

type Page = Awaited<ReturnType<ReturnType<typeof client>['documents']['list']>>;

/** Every page of a workspace's list with `limit`, following nextCursor to the end. */
async function walk(workspaceId: string, limit: number): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | undefined;
  do {
    const page = await client(owner).documents.list({ organizationId: org, workspaceId, limit, ...(cursor ? { cursor } : {}) });
    pages.push(page);
    cursor = page.nextCursor ?? undefined;
    if (pages.length > 50) throw new Error('the pages never end');
  } while (cursor);
  return pages;
}

/** The order the database itself gives, newest first with the id tiebreak. */
async function expectedOrder(workspaceId: string): Promise<string[]> {
  const rows = await server.db.sql<{ id: string }[]>`select id from documents where workspace_id = ${workspaceId} order by created_at desc, id desc`;
  return rows.map((row) => row.id);
}

/** Inserts a document row directly, with a created_at given as PostgreSQL text (microseconds kept). */
async function insertRow(workspaceId: string, createdAt: string, size: number, id = newId('doc')): Promise<string> {
  await server.db.sql`
    insert into documents (id, organization_id, workspace_id, uploaded_by, name, content_type, size, status, created_at, updated_at)
    values (${id}, ${org}, ${workspaceId}, ${owner.id}, ${`row ${id}.txt`}, 'text/plain', ${size}, 'ready', ${createdAt}::timestamptz, ${createdAt}::timestamptz)`;
  return id;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-documents-'));
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000', DATA_DIR: dataDir }, overrides: { now: () => new Date(clock) } });
  owner = await createUser(server.db);
  org = await addMembership(server.db, owner, 'owner');
});
afterAll(async () => {
  await server?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('documents.list pages', () => {
  it("answers 7 documents in pages of 3, 3 and 1, newest first, with the whole workspace's storage on each", async () => {
    const ws = await workspace();
    const made: string[] = [];
    let total = 0;
    for (let i = 1; i <= 7; i++) {
      clock += 1000;
      const { document } = await client(owner).documents.createUpload({ organizationId: org, workspaceId: ws, name: `doc ${i}.txt`, contentType: 'text/plain', size: i * 10 });
      made.push(document.id);
      total += i * 10;
    }
    const pages = await walk(ws, 3);
    expect(pages.map((page) => page.items.length)).toEqual([3, 3, 1]);
    expect(pages.flatMap((page) => page.items.map((d) => d.id))).toEqual([...made].reverse());
    expect(pages.map((page) => page.nextCursor === null)).toEqual([false, false, true]);
    for (const page of pages) {
      expect(page.storage).toEqual({ usedBytes: total, limitBytes: null });
      for (const cursor of [page.nextCursor].filter((c) => c !== null)) {
        expect(cursor.length).toBeGreaterThan(0);
        expect(cursor.length).toBeLessThanOrEqual(200);
      }
    }
    // Dates are newest first as well.
    const times = pages.flatMap((page) => page.items.map((d) => d.createdAt.getTime()));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    // Exactly one full page: no empty page after it.
    const whole = await walk(ws, 7);
    expect(whole.length).toBe(1);
    expect(whole[0]!.nextCursor).toBeNull();
    expect(whole[0]!.items.map((d) => d.id)).toEqual([...made].reverse());
    // The default limit (50) covers them all.
    expect((await client(owner).documents.list({ organizationId: org, workspaceId: ws })).items.length).toBe(7);
  });

  it('pages without duplicates or gaps when documents share the same created_at, down to the microsecond', async () => {
    const ws = await workspace();
    const same = '2026-03-01 12:00:00.123456+00';
    const ids = [
      ...(await Promise.all(Array.from({ length: 4 }, () => insertRow(ws, same, 1)))),
      await insertRow(ws, '2026-03-01 12:00:00.123457+00', 2),
      await insertRow(ws, '2026-03-01 12:00:00.123457+00', 3),
      // The longest id the contract allows, so the cursor's length is tried at its worst.
      await insertRow(ws, '2026-03-01 12:00:00.123455+00', 4, `doc_${'z'.repeat(60)}`),
    ];
    const order = await expectedOrder(ws);
    expect([...order].sort()).toEqual([...ids].sort());
    for (const limit of [1, 2, 3, 4, 6, 7, 200]) {
      const pages = await walk(ws, limit);
      const seen = pages.flatMap((page) => page.items.map((d) => d.id));
      expect(seen, `limit ${limit}`).toEqual(order);
      expect(pages.length, `limit ${limit}`).toBe(Math.ceil(7 / limit));
      expect(pages.at(-1)!.nextCursor).toBeNull();
      for (const page of pages) {
        expect(page.storage).toEqual({ usedBytes: 4 + 2 + 3 + 4, limitBytes: null });
        if (page.nextCursor !== null) expect(page.nextCursor.length).toBeLessThanOrEqual(200);
      }
    }
    // JavaScript Dates keep milliseconds only, yet the microsecond order holds across pages.
    const first = await client(owner).documents.list({ organizationId: org, workspaceId: ws, limit: 2 });
    expect(first.items.map((d) => d.createdAt.toISOString())).toEqual(['2026-03-01T12:00:00.123Z', '2026-03-01T12:00:00.123Z']);
  });

  it('pages the same way over plain REST, passing nextCursor back unchanged', async () => {
    const ws = await workspace();
    for (let i = 0; i < 5; i++) await insertRow(ws, '2026-04-01 08:00:00+00', 7);
    const order = await expectedOrder(ws);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = new URLSearchParams({ organizationId: org, limit: '2', ...(cursor ? { cursor } : {}) }).toString();
      const response = await server.fetch(`/api/v1/workspaces/${ws}/documents?${query}`, { headers: owner.headers });
      expect(response.status).toBe(200);
      const page = await response.json();
      expect(page.storage).toEqual({ usedBytes: 35, limitBytes: null });
      seen.push(...page.items.map((d: { id: string }) => d.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual(order);
  });

  it('answers 400 for limits outside 1 to 200', async () => {
    const ws = await workspace();
    for (const limit of [0, 201, -1, 1.5]) {
      expect(await failure(client(owner).documents.list({ organizationId: org, workspaceId: ws, limit })), String(limit)).toMatchObject({
        status: 400,
        code: 'BAD_REQUEST',
        data: { issues: [{ path: ['limit'] }] },
      });
    }
    expect((await server.fetch(`/api/v1/workspaces/${ws}/documents?organizationId=${org}&limit=abc`, { headers: owner.headers })).status).toBe(400);
  });
});

describe('documents.list cursors', () => {
  let ws: string;
  let otherWs: string;
  let valid: string;
  let foreign: string;

  beforeAll(async () => {
    ws = await workspace();
    otherWs = await workspace();
    for (let i = 0; i < 3; i++) {
      await insertRow(ws, `2026-05-01 10:00:0${i}+00`, 1);
      await insertRow(otherWs, `2026-05-01 10:00:0${i}+00`, 1);
    }
    valid = (await client(owner).documents.list({ organizationId: org, workspaceId: ws, limit: 1 })).nextCursor!;
    foreign = (await client(owner).documents.list({ organizationId: org, workspaceId: otherWs, limit: 1 })).nextCursor!;
    expect(valid).toEqual(expect.any(String));
    expect(foreign).toEqual(expect.any(String));
  });

  const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);

  it('accepts its own cursors', async () => {
    const next = await client(owner).documents.list({ organizationId: org, workspaceId: ws, limit: 1, cursor: valid });
    expect(next.items.length).toBe(1);
  });

  it('answers 400 with an issue on cursor for anything else', async () => {
    const [payload, signature] = valid.split('.') as [string, string];
    const [at, id] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [string, string];
    const bad: Record<string, string> = {
      'a tampered payload': `${flip(payload, 3)}.${signature}`,
      'a tampered signature': `${payload}.${flip(signature, 5)}`,
      'a payload re-encoded with another position': `${Buffer.from(JSON.stringify(['2099-01-01 00:00:00+00', id])).toString('base64url')}.${signature}`,
      'a random string': 'hello-world',
      'random base64url': Buffer.from(crypto.getRandomValues(new Uint8Array(60))).toString('base64url'),
      'a timestamp': '2026-05-01T10:00:01.000Z',
      'the raw position': at,
      'a cursor from another workspace': foreign,
      'a cursor signed with another secret': encodeCursor('not-the-service-secret', { at, id }, ws),
      'an extra segment': `${valid}.x`,
      'no signature': `${payload}.`,
      'only a signature': `.${signature}`,
      'a payload that is not a position': `${Buffer.from('{"at":1}').toString('base64url')}.${signature}`,
      'longer than 200 characters': 'a'.repeat(201),
    };
    await expectRefused(bad);
    // An empty cursor is refused by the schema too.
    expect((await server.fetch(`/api/v1/workspaces/${ws}/documents?organizationId=${org}&cursor=`, { headers: owner.headers })).status).toBe(400);
  });

  // A signature as long as the real one in characters but not in bytes made timingSafeEqual throw
  // (a 500) in src/pagination/cursor.ts.
  it('answers 400, not 500, for a cursor with non-ASCII characters in its signature', async () => {
    const [payload, signature] = valid.split('.') as [string, string];
    await expectRefused({
      'one non-ASCII character': `${payload}.${signature.slice(0, -1)}é`,
      'all multi-byte characters': `${payload}.${'é'.repeat(signature.length)}`,
      'an astral character': `${payload}.${signature.slice(0, -2)}😀`,
    });
  });

  /** Each cursor answers 400 with one issue on ['cursor'], over RPC and REST. */
  async function expectRefused(cursors: Record<string, string>): Promise<void> {
    for (const [name, cursor] of Object.entries(cursors)) {
      const error = await failure(client(owner).documents.list({ organizationId: org, workspaceId: ws, cursor }));
      expect(error, name).toMatchObject({ status: 400, code: 'BAD_REQUEST', defined: true });
      expect(
        (error.data as { issues: { path: unknown[] }[] }).issues.map((issue) => issue.path),
        name,
      ).toEqual([['cursor']]);

      const response = await server.fetch(`/api/v1/workspaces/${ws}/documents?${new URLSearchParams({ organizationId: org, cursor })}`, { headers: owner.headers });
      expect(response.status, name).toBe(400);
      expect(await response.json()).toMatchObject({ defined: true, code: 'BAD_REQUEST', status: 400, data: { issues: [{ path: ['cursor'] }] } });
    }
  }
});

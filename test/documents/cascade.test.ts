/**
 * Deleting a workspace or an organization removes its documents' stored objects too, best effort:
 * an object that survives is logged and does not stop the deletion.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import type { StorageDriver } from '../../src/storage/driver.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

let server: TestServer;
let owner: TestUser;
// Keys listed here refuse to be deleted, as a bucket with a failing node would.
const stuck = new Set<string>();

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '1000', TRUSTED_ORIGINS: 'https://app.example.com' } });
  const storage = server.services.storage;
  const realDeleteMany = storage.deleteMany.bind(storage);
  (storage as { deleteMany: StorageDriver['deleteMany'] }).deleteMany = async (keys) => {
    const { failed } = await realDeleteMany(keys.filter((key) => !stuck.has(key)));
    return { failed: [...failed, ...keys.filter((key) => stuck.has(key))] };
  };
  owner = await createUser(server.db);
});
afterAll(() => server.close());

const client = () => createClient({ baseUrl: server.origin, token: owner.token, fetch: clientFetch(server) });

async function uploaded(organizationId: string, workspaceId: string, name: string) {
  const { document, upload } = await client().documents.createUpload({ organizationId, workspaceId, name, contentType: 'text/plain', size: 5 });
  expect((await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: 'hello' })).status).toBe(200);
  await client().documents.complete({ id: document.id });
  return `${organizationId}/${document.id}`;
}

describe('cascading deletes and stored objects', () => {
  it('workspaces.delete removes the objects and logs one that survives', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    const workspace = await client().workspaces.create({ organizationId: org, name: 'Cascade', slug: 'cascade' });
    const gone = await uploaded(org, workspace.id, 'a.txt');
    const survivor = await uploaded(org, workspace.id, 'b.txt');
    stuck.add(survivor);

    expect(await client().workspaces.delete({ id: workspace.id })).toEqual({ id: workspace.id });
    expect(await server.services.storage.stat(gone)).toBeNull();
    expect(await server.services.storage.stat(survivor)).toEqual({ size: 5 });
    expect(server.logs.filter((line) => line.level === 40 && line.key === survivor)).toHaveLength(1);
    const [row] = await server.db.sql`select count(*)::int as n from documents where workspace_id = ${workspace.id}`;
    expect(row!.n).toBe(0);
  });

  it('organization delete removes every document object of the organization', async () => {
    const org = await addMembership(server.db, owner, 'owner');
    const [{ slug }] = (await server.db.sql<{ slug: string }[]>`select slug from organizations where id = ${org}`) as unknown as [{ slug: string }];
    const workspace = await client().workspaces.create({ organizationId: org, name: 'Org cascade', slug: 'org-cascade' });
    const key = await uploaded(org, workspace.id, 'c.txt');

    const response = await server.fetch('/api/auth/organization/delete', {
      method: 'POST',
      headers: { ...owner.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ organizationId: org, confirmSlug: slug }),
    });
    expect(response.status).toBe(200);
    expect(await server.services.storage.stat(key)).toBeNull();
  });
});

/**
 * What a partner integrator does: generate an SDK from the served document with a third-party
 * generator (@hey-api/openapi-ts), type-check it strictly, and call the real server with it.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient as generateSdk } from '@hey-api/openapi-ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPILERS, strictTypeCheck } from '../support/compilers.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import packageJson from '../../package.json' with { type: 'json' };
import { addMembership, createUser, type TestUser } from '../support/users.ts';

/** system.health answers the package's version (the contract's). */
const packageVersion = packageJson.version;

const root = fileURLToPath(new URL('../..', import.meta.url));
// Inside the repository (ignored by git) so the generated TypeScript resolves like project code.
const dir = join(root, '.tmp', `sdk-${process.pid}`);

let server: TestServer;
let owner: TestUser;
let org: string;

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  owner = await createUser(server.db);
  org = await addMembership(server.db, owner, 'owner');
  await mkdir(dir, { recursive: true });
  const document = await (await fetch(`${server.origin}/api/v1/openapi.json`)).text();
  await writeFile(join(dir, 'openapi.json'), document);
  await generateSdk({ input: join(dir, 'openapi.json'), output: join(dir, 'sdk'), logs: { level: 'silent' } });
}, 120_000);
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

describe('an SDK generated from /api/v1/openapi.json', () => {
  it.each(COMPILERS)(
    'type-checks under strict %s',
    async (_name, tsc) => {
      await expect(strictTypeCheck(tsc, [join(dir, 'sdk/index.ts'), join(dir, 'sdk/client.gen.ts')])).resolves.toBeDefined();
    },
    120_000,
  );

  it('calls the real server: public, signed-in, and an error answer', async () => {
    const sdk = await import(join(dir, 'sdk/index.ts'));
    // No base URL to set: the served document's first server is this deployment's PUBLIC_URL.

    const health = await sdk.systemHealth();
    expect(health.response.status).toBe(200);
    expect(health.data).toMatchObject({ status: 'ok', version: packageVersion });

    const headers = owner.headers;
    const created = await sdk.workspacesCreate({ body: { organizationId: org, name: 'From the SDK', slug: 'from-sdk' }, headers });
    expect(created.data).toMatchObject({ organizationId: org, slug: 'from-sdk' });
    const listed = await sdk.workspacesList({ query: { organizationId: org }, headers });
    expect(listed.data.map((w: { id: string }) => w.id)).toContain(created.data.id);
    const got = await sdk.workspacesGet({ path: { slug: 'from-sdk' }, query: { organizationId: org }, headers });
    expect(got.data.storage).toEqual({ usedBytes: 0, limitBytes: null });

    const taken = await sdk.workspacesCreate({ body: { organizationId: org, name: 'Again', slug: 'from-sdk' }, headers });
    expect(taken.response.status).toBe(409);
    expect(taken.error).toMatchObject({ code: 'CONFLICT', defined: true });
  });
});

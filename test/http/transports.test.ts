import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { procedures } from '../../generated/procedures.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { fakeIdentity } from '../support/fake-identity.ts';
import packageJson from '../../package.json' with { type: 'json' };
import { procedureHandlers as builtHandlers } from '../../src/composition/handlers.ts';

/** system.health answers the package's version (the contract's). */
const packageVersion = packageJson.version;

// Ids shaped as the service makes them (the contract's patterns refuse any other).
const ORG = 'org_pycdybk377oxtzq6svizx3or';
const WS = 'ws_i5xx2bzn3kir2gshyl7sn5pk';
const identity = fakeIdentity({
  users: { usr_owner: { organizations: { [ORG]: 'owner' } }, usr_admin: { role: 'admin' } },
  workspaces: { [WS]: ORG },
});

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    overrides: {
      ...identity,
      handlers: {
        // Echo handlers: they show what the binding layer hands a handler.
        'documents.list': (input) => ({ items: [], nextCursor: input.cursor ?? null, storage: { usedBytes: input.limit ?? 0, limitBytes: null } }),
        'workspaces.create': (input) => ({
          id: 'ws_aaaaaaaaaaaaaaaaaaaaaaaa',
          organizationId: input.organizationId,
          teamId: input.teamId ?? null,
          name: input.name,
          slug: input.slug,
          createdAt: new Date('2026-11-21T09:15:00.000Z'),
        }),
      },
    },
  });
});
afterAll(() => server.close());

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const owner = { authorization: 'Bearer usr_owner' };

describe('both transports reach the same handler', () => {
  it('system.health over REST answers ISO dates and the package version', async () => {
    const response = await server.fetch('/api/v1/health');
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toMatchObject({ status: 'ok', version: packageVersion });
    expect(new Date(body.time).toISOString()).toBe(body.time);
  });

  it('system.health over RPC marks the date in meta', async () => {
    const response = await server.fetch('/rpc/system/health', json({ json: {} }));
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.json).toMatchObject({ status: 'ok', version: packageVersion });
    expect(body.meta).toEqual([['date', ['time']]]);
  });

  it('an RPC call with no body at all is an empty input', async () => {
    const response = await server.fetch('/rpc/system/health', { method: 'POST' });
    expect(response.status).toBe(200);
  });

  it('REST coerces query strings by the contract and applies defaults', async () => {
    const given = await server.fetch(`/api/v1/workspaces/${WS}/documents?organizationId=${ORG}&limit=7`, { headers: owner });
    expect((await given.json()).storage.usedBytes).toBe(7);
    const defaulted = await server.fetch(`/api/v1/workspaces/${WS}/documents?organizationId=${ORG}`, { headers: owner });
    expect((await defaulted.json()).storage.usedBytes).toBe(50);
  });

  it('RPC takes path, query and body fields as one input object', async () => {
    const response = await server.fetch('/rpc/documents/list', json({ json: { workspaceId: WS, organizationId: ORG, limit: 3 } }, owner));
    expect(response.status).toBe(200);
    expect((await response.json()).json.storage.usedBytes).toBe(3);
  });

  it('a POST body reaches the handler on both transports', async () => {
    const input = { organizationId: ORG, name: 'Research', slug: 'research' };
    const rest = await server.fetch('/api/v1/workspaces', json(input, owner));
    const rpc = await server.fetch('/rpc/workspaces/create', json({ json: input }, owner));
    expect(rest.status).toBe(200);
    expect(rpc.status).toBe(200);
    const restBody = await rest.json();
    const rpcBody = await rpc.json();
    expect(restBody).toEqual(rpcBody.json);
    expect(rpcBody.meta).toEqual([['date', ['createdAt']]]);
  });
});

describe('validation: 400 BAD_REQUEST with data.issues', () => {
  const cases: { name: string; path: string; init?: RequestInit; issue: Record<string, unknown> }[] = [
    { name: 'limit above its maximum', path: `/api/v1/workspaces/${WS}/documents?organizationId=${ORG}&limit=201`, issue: { path: ['limit'] } },
    { name: 'limit that is not a number', path: `/api/v1/workspaces/${WS}/documents?organizationId=${ORG}&limit=ten`, issue: { path: ['limit'] } },
    { name: 'a missing required query field', path: `/api/v1/workspaces/${WS}/documents`, issue: { path: ['organizationId'] } },
    { name: 'an unknown query field', path: `/api/v1/workspaces/${WS}/documents?organizationId=${ORG}&sort=asc`, issue: { path: ['sort'], message: 'is not a known field' } },
    { name: 'an empty cursor', path: `/api/v1/workspaces/${WS}/documents?organizationId=${ORG}&cursor=`, issue: { path: ['cursor'] } },
    { name: 'a bad slug', path: '/api/v1/workspaces', init: json({ organizationId: ORG, name: 'X', slug: '-bad-' }, owner), issue: { path: ['slug'] } },
    { name: 'an unknown body field', path: '/api/v1/workspaces', init: json({ organizationId: ORG, name: 'X', slug: 'ok', owner: 'me' }, owner), issue: { path: ['owner'] } },
    {
      name: 'a control character in a single-line field',
      path: '/api/v1/workspaces',
      init: json({ organizationId: ORG, name: 'Line\nbreak', slug: 'ok' }, owner),
      issue: { path: ['name'], params: { reason: 'control_characters' } },
    },
    {
      name: 'a control character over RPC',
      path: '/rpc/workspaces/create',
      init: json({ json: { organizationId: ORG, name: 'Bell\u0007', slug: 'ok' } }, owner),
      issue: { path: ['name'], params: { reason: 'control_characters' } },
    },
  ];
  for (const { name, path, init, issue } of cases) {
    it(`refuses ${name}`, async () => {
      const response = await server.fetch(path, { headers: owner, ...init });
      expect(response.status).toBe(400);
      const body = await response.json();
      expect(body).toMatchObject({ defined: true, code: 'BAD_REQUEST', status: 400 });
      expect(body.data.issues).toContainEqual(expect.objectContaining(issue));
    });
  }

  it('refuses a body that is not JSON', async () => {
    const response = await server.fetch('/api/v1/workspaces', { method: 'POST', headers: { ...owner, 'content-type': 'application/json' }, body: '{"name":' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'BAD_REQUEST' });
  });

  it('refuses a JSON body that is not an object', async () => {
    const response = await server.fetch('/api/v1/workspaces', json([1, 2], owner));
    expect(response.status).toBe(400);
  });

  it('refuses an RPC body without json, and a malformed meta', async () => {
    expect((await server.fetch('/rpc/system/health', json({ input: {} }))).status).toBe(400);
    expect((await server.fetch('/rpc/system/health', json({ json: {}, meta: [['date', ['nope']]] }))).status).toBe(400);
    expect((await server.fetch('/rpc/system/health', json({ json: [] }))).status).toBe(400);
  });

  it('the contact message keeps tab, LF and CR but not other control characters', async () => {
    const ok = await server.fetch('/api/v1/contact', json({ email: 'ada@example.com', message: 'Hello,\r\n\tthis is fine.' }));
    expect(ok.status).toBe(412); // valid input; no email provider is configured here
    const bad = await server.fetch('/api/v1/contact', json({ email: 'ada@example.com', message: 'Hello, bell \u0007 here' }));
    expect(bad.status).toBe(400);
    expect((await bad.json()).data.issues[0]).toMatchObject({ path: ['message'], params: { reason: 'control_characters' } });
  });
});

describe('bodies over 1 MiB answer 413 payload_too_large', () => {
  const big = JSON.stringify({ json: { organizationId: ORG, name: 'x'.repeat(1024 * 1024), slug: 'ok' } });
  for (const path of ['/api/v1/workspaces', '/rpc/workspaces/create']) {
    it(`on ${path}`, async () => {
      const response = await server.fetch(path, { method: 'POST', headers: { ...owner, 'content-type': 'application/json' }, body: big });
      expect(response.status).toBe(413);
      const body = await response.json();
      expect(body).toMatchObject({ error: 'payload_too_large', requestId: response.headers.get('x-request-id') });
    });
  }
});

describe('unknown routes and methods', () => {
  it('answers 404 in the error shape for an unknown path', async () => {
    for (const path of ['/api/v1/nope', '/nope', '/rpc/system/nope']) {
      const response = await server.fetch(path, path.startsWith('/rpc') ? json({ json: {} }) : {});
      expect(response.status, path).toBe(404);
      expect(await response.json()).toMatchObject({ defined: false, code: 'NOT_FOUND', status: 404 });
    }
  });

  it('answers 405 with Allow for an undeclared method on a declared path', async () => {
    const response = await server.fetch('/api/v1/health', { method: 'PUT' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect(await response.json()).toMatchObject({ code: 'METHOD_NOT_ALLOWED', status: 405 });

    const workspace = await server.fetch('/api/v1/workspaces/ws_1', { method: 'POST' });
    expect(workspace.status).toBe(405);
    expect(workspace.headers.get('allow')).toBe('DELETE, GET, HEAD, PATCH');
  });

  it('answers 405 Allow: POST for GET on an RPC procedure', async () => {
    const response = await server.fetch('/rpc/system/health');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
  });
});

describe('every procedure has a route on both transports', () => {
  it('the procedure table holds the 35 procedures of the specification', () => {
    expect(Object.keys(procedures)).toHaveLength(35);
  });
});

describe('procedures not built yet', () => {
  // The last one of the issue that builds it; once every procedure is built, there is no 501 left to see.
  it.skipIf('admin.system.status' in builtHandlers)('answer 501 NOT_IMPLEMENTED after the access checks, on both transports', async () => {
    // The contract declares the 501 on exactly the procedures not built yet (until they are).
    const admin = { authorization: 'Bearer usr_admin' };
    const rest = await server.fetch('/api/v1/admin/system', { headers: admin });
    expect(rest.status).toBe(501);
    expect(await rest.json()).toEqual({ defined: true, code: 'NOT_IMPLEMENTED', status: 501, message: 'This operation is not available on this deployment yet.' });
    const rpc = await fetch(`${server.origin}/rpc/admin/system/status`, { ...json({ json: {} }, admin) });
    expect(rpc.status).toBe(501);
    expect((await fetch(`${server.origin}/api/v1/admin/system`)).status).toBe(401);
    expect((await fetch(`${server.origin}/api/v1/admin/system`, { headers: owner })).status).toBe(403);
  });
});

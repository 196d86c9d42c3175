/**
 * Access is declared in the contract and enforced by one binding layer. These cases iterate over
 * every procedure: each must declare its access, refuse callers without a session (401) on both
 * transports, refuse non-admins on admin procedures, and apply the role -> permission matrix.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import document from '../../generated/openapi.json' with { type: 'json' };
import { procedures, type ProcedureDefinition } from '../../generated/procedures.ts';
import { permissionMatrix, roles, type Permission } from '../../src/auth/permissions.ts';
import { ApiError } from '../../src/contract/errors.ts';
import type { Handlers } from '../../src/context.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { fakeIdentity } from '../support/fake-identity.ts';
import { exampleInput, restRequest } from '../support/example-inputs.ts';

const ORG = 'org_pycdybk377oxtzq6svizx3or';
const WORKSPACE = 'ws_i5xx2bzn3kir2gshyl7sn5pk';
const all = Object.values(procedures) as ProcedureDefinition[];
const publicNames = ['contact.send', 'system.authConfig', 'system.health'];

// Every handler answers a marker error, so a test sees whether the call got past the access check.
const REACHED = 'handler reached';
const handlers = Object.fromEntries(all.map((p) => [p.name, () => { throw new ApiError('FORBIDDEN', { message: REACHED }); }])) as Handlers;
const identity = fakeIdentity({
  users: {
    usr_admin: { role: 'admin' },
    usr_stranger: {},
    usr_owner: { organizations: { [ORG]: 'owner' } },
    usr_orgadmin: { organizations: { [ORG]: 'admin' } },
    usr_member: { organizations: { [ORG]: 'member' } },
  },
  workspaces: { [WORKSPACE]: ORG },
});

let server: TestServer;
beforeAll(async () => {
  const streams = { 'jobs.stream': async (_input: unknown, _ctx: unknown, sink: { send(event: string, data: unknown): void }) => sink.send('reached', { message: REACHED }) };
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000' }, overrides: { ...identity, handlers, streams } });
});
afterAll(() => server.close());

async function rpc(procedure: ProcedureDefinition, input: Record<string, unknown>, user?: string) {
  const response = await server.fetch(`/rpc/${procedure.name.replace(/\./g, '/')}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(user ? { authorization: `Bearer ${user}` } : {}) },
    body: JSON.stringify({ json: input }),
  });
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
    // A stream that opened got past the access check; its marker event says so.
    const text = await response.text();
    return { status: 403, body: { message: text.includes(REACHED) ? REACHED : text } };
  }
  return { status: response.status, body: await response.json() };
}

/** The example input, pointed at the test organization where the procedure takes one. */
function inputFor(procedure: ProcedureDefinition): Record<string, unknown> {
  const input = exampleInput(procedure);
  return procedure.fields.some((f) => f.name === 'organizationId') ? { ...input, organizationId: ORG } : input;
}

describe('the contract declares access for every operation', () => {
  const operations = Object.values(document.paths as Record<string, Record<string, any>>).flatMap((item) => Object.values(item));
  it.each(operations.map((op) => [op.operationId, op]))('%s has a valid x-access', (_name, op) => {
    const access = op['x-access'];
    expect(access).toBeDefined();
    if (typeof access === 'string') expect(['public', 'session', 'platform-admin']).toContain(access);
    else {
      expect(['organizationId', 'workspaceId', 'row']).toContain(access.tenant);
      if (access.permission) expect(Object.keys(permissionMatrix)).toContain(access.permission);
    }
    expect(access === 'public').toBe(publicNames.includes(op.operationId));
    if (access === 'public') expect(op.security).toEqual([]);
    else expect(op.responses['401'] && op.responses['403']).toBeTruthy();
  });
});

describe('should require access: no session answers 401 on both transports', () => {
  const guarded = all.filter((p) => p.access !== 'public');
  it.each(guarded.map((p) => [p.name, p]))('%s', async (_name, procedure) => {
    const input = exampleInput(procedure);
    const viaRpc = await rpc(procedure, input);
    expect(viaRpc.status).toBe(401);
    expect(viaRpc.body).toEqual({ defined: true, code: 'UNAUTHORIZED', status: 401, message: 'You must be signed in.' });

    const { path, init } = restRequest(procedure, input);
    const viaRest = await server.fetch(path, { ...init, headers: { ...init.headers, authorization: 'Bearer usr_unknown' } });
    expect(viaRest.status).toBe(401);
  });
});

describe('platform-admin procedures refuse other signed-in users', () => {
  const adminOnly = all.filter((p) => p.access === 'platform-admin');
  it.each(adminOnly.map((p) => [p.name, p]))('%s', async (_name, procedure) => {
    const input = exampleInput(procedure);
    for (const user of ['usr_owner', 'usr_stranger']) {
      const { status, body } = await rpc(procedure, input, user);
      expect(status).toBe(403);
      expect(body.message).toBe('You do not have access to this resource.');
    }
    expect((await rpc(procedure, input, 'usr_admin')).body.message).toBe(REACHED);
  });
});

describe('organization procedures apply the role -> permission matrix', () => {
  const scoped = all.filter((p) => typeof p.access === 'object' && p.access.tenant !== 'row');
  const users = { owner: 'usr_owner', admin: 'usr_orgadmin', member: 'usr_member' } as const;
  const cases = scoped.flatMap((procedure) => roles.map((role) => [procedure.name, role, procedure] as const));

  it.each(cases)('%s as %s', async (_name, role, procedure) => {
    const access = procedure.access as { permission?: Permission };
    const allowed = access.permission === undefined || (permissionMatrix[access.permission] as readonly string[]).includes(role);
    const { status, body } = await rpc(procedure, inputFor(procedure), users[role]);
    expect(status).toBe(403);
    expect(body.message).toBe(allowed ? REACHED : 'You do not have access to this resource.');
  });

  it.each(scoped.map((p) => [p.name, p]))('%s refuses a non-member, and a platform admin who is not a member', async (_name, procedure) => {
    for (const user of ['usr_stranger', 'usr_admin']) {
      const { status, body } = await rpc(procedure, inputFor(procedure), user);
      expect(status).toBe(403);
      expect(body.message).toBe('You do not have access to this resource.');
    }
  });

  it('a workspace that does not exist answers 404', async () => {
    const search = procedures['documents.search'] as ProcedureDefinition;
    const { status, body } = await rpc(search, { ...exampleInput(search), workspaceId: 'ws_missing' }, 'usr_owner');
    expect(status).toBe(404);
    expect(body).toMatchObject({ defined: true, code: 'NOT_FOUND' });
  });
});

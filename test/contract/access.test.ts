/**
 * Access is declared in the contract and enforced by one binding layer. These cases are generated
 * from the route tables, for every operation of both contracts (the 35 procedures and the
 * identity routes), with no exclusions: each must declare its access, refuse callers without a
 * session (401), refuse non-admins on admin operations, apply the role -> permission matrix, and,
 * for by-id operations, answer 404 for a missing row and 403 for another organization's row.
 * A new operation is covered without writing a test; a new resource needs one row seeder below.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import document from '../../generated/openapi.json' with { type: 'json' };
import authDocument from '../../generated/auth-openapi.json' with { type: 'json' };
import { procedures, type ProcedureDefinition } from '../../generated/procedures.ts';
import { authRoutes } from '../../generated/auth-routes.ts';
import { permissionMatrix, roles, type Permission } from '../../src/auth/permissions.ts';
import { ApiError } from '../../src/contract/errors.ts';
import type { AuthHandlers, Handlers } from '../../src/context.ts';
import type { Sql } from '../../src/db/connection.ts';
import { newId } from '../../src/ids.ts';
import { resourceRegistry } from '../../src/composition/resources.ts';
const findResource = (name: string) => resourceRegistry.find(name);
import { startTestServer, type TestServer } from '../support/server.ts';
import { fakeIdentity } from '../support/fake-identity.ts';
import { exampleInput, restRequest } from '../support/example-inputs.ts';

const ORG = 'org_pycdybk377oxtzq6svizx3or';
/** An organization none of the test users belongs to. */
const OTHER = newId('org');
const WORKSPACE = 'ws_i5xx2bzn3kir2gshyl7sn5pk';
const FORBIDDEN = 'You do not have access to this resource.';
const operations = [...Object.values(procedures), ...Object.values(authRoutes)] as ProcedureDefinition[];
const publicNames = ['contact.send', 'system.authConfig', 'system.health'];

type RowAccess = { permission: Permission; tenant: 'row'; resource: string; idField?: string };
/** An organization permission on a row. */
const rowAccess = (p: ProcedureDefinition) => (typeof p.access === 'object' && 'tenant' in p.access && p.access.tenant === 'row' ? (p.access as RowAccess) : null);
/** A platform admin acting on a row. */
const adminRowAccess = (p: ProcedureDefinition) => (typeof p.access === 'object' && 'role' in p.access ? p.access : null);
/** The row a by-id operation names, either way. */
const namedRow = (p: ProcedureDefinition) => rowAccess(p) ?? adminRowAccess(p);
const adminOnlyAccess = (p: ProcedureDefinition) => p.access === 'platform-admin' || adminRowAccess(p) !== null;

// Every handler answers a marker error, so a test sees whether the call got past the access check.
const REACHED = 'handler reached';
const reached = () => {
  throw new ApiError('FORBIDDEN', { message: REACHED });
};
const handlers = Object.fromEntries(Object.keys(procedures).map((name) => [name, reached])) as Handlers;
const authHandlers = Object.fromEntries(Object.keys(authRoutes).map((name) => [name, reached])) as AuthHandlers;
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

/** One row of each resource a by-id operation names, created in an organization; answers its id. */
const seeders: Record<string, (sql: Sql, organizationId: string) => Promise<string>> = {
  async workspace(sql, organizationId) {
    const id = newId('ws');
    await sql`insert into workspaces (id, organization_id, name, slug) values (${id}, ${organizationId}, 'Seeded', ${id.replace('_', '-')})`;
    return id;
  },
  async document(sql, organizationId) {
    const workspaceId = await seeders.workspace!(sql, organizationId);
    const id = newId('doc');
    await sql`insert into documents (id, organization_id, workspace_id, name, content_type, size, status)
              values (${id}, ${organizationId}, ${workspaceId}, 'seeded.pdf', 'application/pdf', 10, 'pending')`;
    return id;
  },
  async team(sql, organizationId) {
    const id = newId('team');
    await sql`insert into teams (id, organization_id, name) values (${id}, ${organizationId}, 'Seeded')`;
    return id;
  },
  async job(sql, organizationId) {
    const id = newId('job');
    // Failed: every by-id job operation then has something to do (retry queues a new one, cancel answers 409).
    await sql`insert into jobs (id, organization_id, kind, status, input, credits, error_message, finished_at)
              values (${id}, ${organizationId}, 'text.embed', 'failed', ${sql.json({ texts: ['seeded'] })}, 1, 'The job failed.', now())`;
    return id;
  },
  async invitation(sql, organizationId) {
    const id = newId('inv');
    await sql`insert into invitations (id, organization_id, email, role, expires_at) values (${id}, ${organizationId}, 'invitee@example.com', 'member', now() + interval '1 day')`;
    return id;
  },
  // The organization itself (the platform admin's by-id operations): its own id.
  async organization(_sql, organizationId) {
    return organizationId;
  },
  // A platform row: the organization is not part of it. Its key is an id, so missingId works.
  async flag(sql) {
    const key = newId('flag');
    await sql`insert into feature_flags (key, description) values (${key}, 'Seeded')`;
    return key;
  },
};

/** A well-formed id with the resource's prefix that names no row. */
function missingId(existing: string): string {
  return `${existing.slice(0, existing.indexOf('_'))}_${'a'.repeat(24)}`;
}

let server: TestServer;
/** Per resource: a row in the test organization and one in another organization. */
const rows: Record<string, { own: string; other: string }> = {};
beforeAll(async () => {
  const streams = { 'jobs.stream': async (_input: unknown, _ctx: unknown, sink: { send(event: string, data: unknown): void }) => sink.send('reached', { message: REACHED }) };
  server = await startTestServer({
    env: { RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000', VALIDATE_RESPONSES: 'false' },
    overrides: { ...identity, handlers, streams, authHandlers },
  });
  const { sql } = server.db;
  for (const id of [ORG, OTHER]) await sql`insert into organizations (id, name, slug) values (${id}, ${id}, ${id.replace('_', '-')}) on conflict do nothing`;
  const resources = new Set(
    operations
      .map(namedRow)
      .filter((a) => a !== null)
      .map((a) => a.resource),
  );
  for (const resource of resources) {
    const seed = seeders[resource];
    if (!seed || !findResource(resource)) continue; // reported by the test below
    rows[resource] = { own: await seed(sql, ORG), other: await seed(sql, OTHER) };
  }
});
afterAll(() => server.close());

/** Calls an operation as `user`: procedures over RPC, identity routes over REST. */
async function call(operation: ProcedureDefinition, input: Record<string, unknown>, user?: string): Promise<{ status: number; body: any }> {
  const auth = user ? { authorization: `Bearer ${user}` } : {};
  let response: Response;
  if (operation.name.startsWith('auth.')) {
    const { path, init } = restRequest(operation, input);
    response = await server.fetch(path, { ...init, headers: { ...init.headers, ...auth } });
  } else {
    response = await server.fetch(`/rpc/${operation.name.replace(/\./g, '/')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ json: input }),
    });
  }
  if (response.headers.get('content-type')?.startsWith('text/event-stream')) {
    // A stream that opened got past the access check; its marker event says so.
    const text = await response.text();
    return { status: 403, body: { message: text.includes(REACHED) ? REACHED : text } };
  }
  return { status: response.status, body: await response.json() };
}

/** The example input, pointed at the test organization, or at the seeded row of a by-id operation. */
function inputFor(operation: ProcedureDefinition, which: 'own' | 'other' | 'missing' = 'own'): Record<string, unknown> {
  const input = exampleInput(operation);
  if (operation.fields.some((f) => f.name === 'organizationId')) input.organizationId = ORG;
  const access = namedRow(operation);
  const seeded = access && rows[access.resource];
  if (access && seeded) input[access.idField ?? 'id'] = which === 'missing' ? missingId(seeded.own) : seeded[which];
  return input;
}

const allowed = (operation: ProcedureDefinition, role: string) => {
  const { permission } = operation.access as { permission?: Permission };
  return permission === undefined || (permissionMatrix[permission] as readonly string[]).includes(role);
};

describe('the contracts declare access for every operation', () => {
  const declared = [document, authDocument].flatMap((doc) =>
    Object.values(doc.paths as Record<string, Record<string, any>>)
      .flatMap((item) => Object.values(item))
      .filter((op) => op.operationId && op['x-transport'] === undefined),
  );
  it.each(declared.map((op) => [op.operationId, op]))('%s has a valid x-access', (name, op) => {
    const access = op['x-access'];
    expect(access).toBeDefined();
    if (typeof access === 'string') expect(['public', 'session', 'platform-admin']).toContain(access);
    else if ('role' in access) {
      // A platform admin on a row: the resource, and the input field naming it.
      expect(access.role).toBe('platform-admin');
      expect(typeof access.resource).toBe('string');
      expect(access.permission).toBeUndefined();
      expect(operations.find((p) => p.name === name)!.fields.map((f) => f.name)).toContain(access.idField ?? 'id');
    } else {
      expect(['organizationId', 'workspaceId', 'row']).toContain(access.tenant);
      if (access.permission) expect(Object.keys(permissionMatrix)).toContain(access.permission);
      // A by-id operation names its resource and a permission; the field it reads must be an input.
      if (access.tenant === 'row') {
        expect(access.permission).toBeDefined();
        expect(typeof access.resource).toBe('string');
        const row = operations.find((p) => p.name === name)!;
        expect(row.fields.map((f) => f.name)).toContain(access.idField ?? 'id');
      } else expect(access.resource).toBeUndefined();
    }
    if (!String(name).startsWith('auth.')) expect(access === 'public').toBe(publicNames.includes(name));
    // Public: no credentials needed ([]), or optional ones (a list that includes the anonymous {}).
    if (access === 'public') expect(op.security.length === 0 || op.security.some((s: object) => Object.keys(s).length === 0)).toBe(true);
    else expect(op.responses['401'] && op.responses['403']).toBeTruthy();
  });

  it('every resource a by-id operation names has a seeder here (and a loader, unless its procedures are not built yet)', () => {
    const named = new Set(
      operations
        .map(namedRow)
        .filter((a) => a !== null)
        .map((a) => a.resource),
    );
    for (const resource of named) if (findResource(resource)) expect(Object.keys(seeders), `add a seeder for ${resource}`).toContain(resource);
  });
});

describe('should require access: no session answers 401', () => {
  const guarded = operations.filter((p) => p.access !== 'public');
  it.each(guarded.map((p) => [p.name, p]))('%s', async (_name, operation) => {
    const { status, body } = await call(operation, inputFor(operation));
    expect(status).toBe(401);
    expect(body).toMatchObject({ code: 'UNAUTHORIZED', status: 401, message: 'You must be signed in.' });
    // A token that names no session is no session either (procedures over REST too).
    if (!operation.name.startsWith('auth.')) {
      const { path, init } = restRequest(operation, inputFor(operation));
      const viaRest = await server.fetch(path, { ...init, headers: { ...init.headers, authorization: 'Bearer usr_unknown' } });
      expect(viaRest.status).toBe(401);
    }
  });
});

describe('platform-admin operations refuse other signed-in users', () => {
  const adminOnly = operations.filter((p) => adminOnlyAccess(p) && (!adminRowAccess(p) || findResource(adminRowAccess(p)!.resource)));
  it.each(adminOnly.map((p) => [p.name, p]))('%s', async (_name, operation) => {
    const input = inputFor(operation);
    for (const user of ['usr_owner', 'usr_stranger']) {
      const { status, body } = await call(operation, input, user);
      expect(status).toBe(403);
      expect(body.message).toBe(FORBIDDEN);
    }
    expect((await call(operation, input, 'usr_admin')).body.message).toBe(REACHED);
  });
});

describe('organization operations apply the role -> permission matrix', () => {
  const scoped = operations.filter((p) => typeof p.access === 'object' && !adminOnlyAccess(p) && (rowAccess(p) === null || findResource(rowAccess(p)!.resource)));
  const users = { owner: 'usr_owner', admin: 'usr_orgadmin', member: 'usr_member' } as const;
  const cases = scoped.flatMap((operation) => roles.map((role) => [operation.name, role, operation] as const));

  it.each(cases)('%s as %s', async (_name, role, operation) => {
    const { status, body } = await call(operation, inputFor(operation), users[role]);
    expect(status).toBe(403);
    expect(body.message).toBe(allowed(operation, role) ? REACHED : FORBIDDEN);
  });

  it.each(scoped.map((p) => [p.name, p]))('%s refuses a non-member, and a platform admin who is not a member', async (_name, operation) => {
    for (const user of ['usr_stranger', 'usr_admin']) {
      const { status, body } = await call(operation, inputFor(operation), user);
      expect(status).toBe(403);
      expect(body.message).toBe(FORBIDDEN);
    }
  });

  it('a workspace that does not exist answers 404', async () => {
    const search = procedures['documents.search'] as ProcedureDefinition;
    const { status, body } = await call(search, { ...exampleInput(search), workspaceId: 'ws_aaaaaaaaaaaaaaaaaaaaaaaa' }, 'usr_owner');
    expect(status).toBe(404);
    expect(body).toMatchObject({ defined: true, code: 'NOT_FOUND' });
  });
});

describe('by-id operations load their row in the binding layer', () => {
  const byId = operations.filter((p) => rowAccess(p) !== null);
  const built = byId.filter((p) => findResource(rowAccess(p)!.resource));

  it.each(built.map((p) => [p.name, p]))("%s: another organization's row answers 403 to every role", async (_name, operation) => {
    for (const user of ['usr_owner', 'usr_orgadmin', 'usr_member', 'usr_admin', 'usr_stranger']) {
      const { status, body } = await call(operation, inputFor(operation, 'other'), user);
      expect(status).toBe(403);
      expect(body).toMatchObject({ code: 'FORBIDDEN', message: FORBIDDEN });
    }
  });

  it.each(built.map((p) => [p.name, p]))('%s: a missing row answers 404 before any permission check', async (_name, operation) => {
    for (const user of ['usr_owner', 'usr_member', 'usr_stranger']) {
      const { status, body } = await call(operation, inputFor(operation, 'missing'), user);
      expect(status).toBe(404);
      expect(body).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    }
  });

  const adminById = operations.filter((p) => adminRowAccess(p) !== null && findResource(adminRowAccess(p)!.resource));
  it.each(adminById.map((p) => [p.name, p]))('%s: a platform admin gets 404 for a missing row; anyone else 403 first', async (_name, operation) => {
    const { status, body } = await call(operation, inputFor(operation, 'missing'), 'usr_admin');
    expect(status).toBe(404);
    expect(body).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    for (const user of ['usr_owner', 'usr_stranger']) expect((await call(operation, inputFor(operation, 'missing'), user)).status).toBe(403);
  });

  // Resources whose procedures are not built yet have no loader: the honest answer is 501, after
  // the 401 and 400 checks, never a handler that runs unauthorized.
  const unbuilt = operations.filter((p) => namedRow(p) !== null && !findResource(namedRow(p)!.resource));
  it.each(unbuilt.map((p) => [p.name, p]))('%s: no loader yet, so 501 NOT_IMPLEMENTED once signed in', async (_name, operation) => {
    // Plain fetch: 501 marks a gap in the service, not an answer of the operation's contract.
    const response = await fetch(`${server.origin}/rpc/${operation.name.replace(/\./g, '/')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${adminRowAccess(operation) ? 'usr_admin' : 'usr_owner'}` },
      body: JSON.stringify({ json: inputFor(operation) }),
    });
    expect(response.status).toBe(501);
    expect(await response.json()).toMatchObject({ code: 'NOT_IMPLEMENTED' });
  });
});

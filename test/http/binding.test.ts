/**
 * The binding layer's input rules, the same on every transport: a field is read only from the
 * place the contract puts it, a `__proto__` key is an unknown field, RPC meta may revive only the
 * declared date-time paths, a missing handler is 501 everywhere, and stream events are checked
 * against the contract like any answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/contract/errors.ts';
import { startTestServer, type TestResponse, type TestServer } from '../support/server.ts';
import { fakeIdentity } from '../support/fake-identity.ts';

const ORG = 'org_pycdybk377oxtzq6svizx3or';
const WS = 'ws_i5xx2bzn3kir2gshyl7sn5pk';
const owner = { authorization: 'Bearer usr_owner', 'content-type': 'application/json' };
const received: unknown[] = [];

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    overrides: {
      ...fakeIdentity({ users: { usr_owner: { organizations: { [ORG]: 'owner' } } }, workspaces: { [WS]: ORG } }),
      handlers: {
        'workspaces.create': (input) => {
          received.push(input);
          return { id: 'ws_aaaaaaaaaaaaaaaaaaaaaaaa', organizationId: input.organizationId, teamId: null, name: input.name, slug: input.slug, createdAt: new Date('2026-11-21T09:15:00.000Z') };
        },
        'workspaces.update': (input, ctx) => ({ ...ctx.row, name: input.name ?? ctx.row.name }),
      },
      streams: {
        // Sends an event whose data breaks the contract: the stream must not carry it.
        'jobs.stream': async (_input, _ctx, sink) => sink.send('ready', { expiresAt: 'not a date' }),
      },
      authHandlers: { 'auth.organization.list': undefined },
    },
  });
  await server.db.sql`insert into organizations (id, name, slug) values (${ORG}, 'Acme', 'acme')`;
  await server.db.sql`insert into workspaces (id, organization_id, name, slug) values (${WS}, ${ORG}, 'Research', 'research')`;
});
afterAll(() => server.close());

async function issues(response: TestResponse): Promise<{ path: unknown[]; message: string }[]> {
  expect(response.status).toBe(400);
  const body = await response.json();
  expect(body).toMatchObject({ code: 'BAD_REQUEST', status: 400 });
  return body.data.issues;
}

describe('a field comes only from where the contract puts it (REST)', () => {
  it('refuses a query parameter that repeats a path parameter', async () => {
    const response = await server.fetch(`/api/v1/workspaces/${WS}?id=${WS}`, { method: 'PATCH', headers: owner, body: JSON.stringify({ name: 'New' }) });
    expect(await issues(response)).toContainEqual({ path: ['id'], message: 'is not a known field' });
  });

  it('refuses a body field that repeats a path parameter', async () => {
    const response = await server.fetch(`/api/v1/workspaces/${WS}`, { method: 'PATCH', headers: owner, body: JSON.stringify({ id: WS, name: 'New' }) });
    expect(await issues(response)).toContainEqual({ path: ['id'], message: 'is not a known field' });
  });

  it("refuses a workspaceId in a search body (it is the path's)", async () => {
    const response = await server.fetch(`/api/v1/workspaces/${WS}/documents/search`, { method: 'POST', headers: owner, body: JSON.stringify({ organizationId: ORG, workspaceId: WS, query: 'q' }) });
    expect(await issues(response)).toContainEqual({ path: ['workspaceId'], message: 'is not a known field' });
  });

  it('still answers 401 before any of that without a session', async () => {
    const response = await server.fetch(`/api/v1/workspaces/${WS}?id=x`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'x' }) });
    expect(response.status).toBe(401);
  });

  it('the row and the update reach the handler when the input is clean', async () => {
    const response = await server.fetch(`/api/v1/workspaces/${WS}`, { method: 'PATCH', headers: owner, body: JSON.stringify({ name: 'Renamed' }) });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ id: WS, organizationId: ORG, name: 'Renamed', slug: 'research' });
  });
});

describe('__proto__, constructor and prototype keys are unknown fields, never merged', () => {
  it.each(['__proto__', 'constructor', 'prototype'])('%s in a REST body', async (key) => {
    const body = `{"organizationId":"${ORG}","name":"Research","slug":"research","${key}":{"polluted":true}}`;
    const response = await server.fetch('/api/v1/workspaces', { method: 'POST', headers: owner, body });
    // The body reader refuses a __proto__ key outright; the others reach the validator.
    const found = await issues(response);
    if (key !== '__proto__') expect(found).toContainEqual({ path: [key], message: 'is not a known field' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each(['__proto__', 'constructor'])('%s in an RPC body', async (key) => {
    const body = `{"json":{"organizationId":"${ORG}","name":"Research","slug":"research","${key}":{"polluted":true}}}`;
    const response = await server.fetch('/rpc/workspaces/create', { method: 'POST', headers: owner, body });
    const found = await issues(response);
    if (key !== '__proto__') expect(found).toContainEqual({ path: [key], message: 'is not a known field' });
  });
});

describe('RPC meta revives only what the contract declares date-time', () => {
  it('refuses meta that would turn a validated name into a Date', async () => {
    const before = received.length;
    const response = await server.fetch('/rpc/workspaces/create', {
      method: 'POST',
      headers: owner,
      body: JSON.stringify({ json: { organizationId: ORG, name: '2020-01-01', slug: 'dated' }, meta: [['date', ['name']]] }),
    });
    expect(await issues(response)).toEqual([{ path: ['meta', 0], message: 'names no date-time field of the input' }]);
    expect(received.length).toBe(before);
  });

  it.each([
    ['not an array', { a: 1 }],
    ['an entry of another kind', [['bigint', ['name']]]],
    ['a path that is not an array', [['date', 'name']]],
  ])('refuses meta that is %s', async (_name, meta) => {
    const response = await server.fetch('/rpc/workspaces/create', {
      method: 'POST',
      headers: owner,
      body: JSON.stringify({ json: { organizationId: ORG, name: 'Research', slug: 'research' }, meta }),
    });
    expect((await issues(response))[0]!.path[0]).toBe('meta');
  });

  it('an empty meta is no meta, and the name stays a string', async () => {
    const response = await server.fetch('/rpc/workspaces/create', { method: 'POST', headers: owner, body: JSON.stringify({ json: { organizationId: ORG, name: '2020-01-01', slug: 'plain' }, meta: [] }) });
    expect(response.status).toBe(200);
    expect((received.at(-1) as { name: unknown }).name).toBe('2020-01-01');
  });
});

describe('one invocation path', () => {
  it('an identity route without a handler answers 501 NOT_IMPLEMENTED, as a procedure does', async () => {
    const response = await fetch(`${server.origin}/api/auth/organization/list`, { headers: owner });
    expect(response.status).toBe(501);
    expect(await response.json()).toMatchObject({ code: 'NOT_IMPLEMENTED', status: 501 });
  });

  it('a stream event outside the contract is never sent: the stream is cut and the bug logged', async () => {
    const response = await fetch(`${server.origin}/api/v1/organizations/${ORG}/jobs/stream`, { headers: owner });
    expect(response.status).toBe(200);
    const text = await response.text().catch(() => '');
    expect(text).not.toContain('not a date');
    expect(server.logs.some((line) => line.level >= 50 && /jobs\.stream \(event ready\) answered outside its contract/.test(JSON.stringify(line)))).toBe(true);
  });

  it('an error a handler throws keeps its code on every transport', () => {
    // The catalogue lives with the contract; HTTP only maps it.
    expect(new ApiError('NOT_FOUND').status).toBe(404);
  });
});

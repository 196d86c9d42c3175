/** The generated typed RPC client against the real server. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClientError, createClient } from '../../generated/client.ts';
import type { StreamHandler } from '../../src/context.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { fakeIdentity } from '../support/fake-identity.ts';

const ORG = 'org_pycdybk377oxtzq6svizx3or';
const job = {
  id: 'job_s6kc6o6oya7vngcngsuu4stu', organizationId: ORG, workspaceId: null, documentId: null, kind: 'text.embed', status: 'queued',
  error: null, credits: 1, attempt: 0, retryOf: null, createdBy: 'usr_owner',
  createdAt: new Date('2026-11-21T09:15:00.000Z'), startedAt: null, finishedAt: null, updatedAt: new Date('2026-11-21T09:15:00.000Z'),
};
const stream: StreamHandler = async (_input, _ctx, sink) => {
  sink.send('ready', { expiresAt: new Date('2026-11-21T09:30:00.000Z') });
  sink.send('job', job, '1');
  sink.send('job', { ...job, status: 'running', startedAt: new Date('2026-11-21T09:15:01.000Z') }, '2');
  sink.send('end', { reason: 'expired' });
};

let server: TestServer;
/** Every answer the client gets is checked against the contract too. */
const checked = (url: string | URL | Request, init?: RequestInit) => server.fetch(String(url), init);
beforeAll(async () => {
  server = await startTestServer({
    overrides: {
      ...fakeIdentity({ users: { usr_owner: { organizations: { [ORG]: 'owner' } } } }),
      handlers: {
        'workspaces.list': (input) => [{ id: 'ws_i5xx2bzn3kir2gshyl7sn5pk', organizationId: input.organizationId, teamId: null, name: 'Research', slug: 'research', createdAt: new Date('2026-11-21T09:15:00.000Z') }],
      },
      streams: { 'jobs.stream': stream },
    },
  });
});
afterAll(() => server.close());

describe('createClient', () => {
  it('calls a public procedure and returns Date objects for date-time fields', async () => {
    const client = createClient({ baseUrl: server.origin, fetch: checked });
    const health = await client.system.health();
    expect(health.status).toBe('ok');
    expect(health.time).toBeInstanceOf(Date);
  });

  it('sends the bearer token and revives dates inside arrays', async () => {
    const client = createClient({ baseUrl: server.origin, token: 'usr_owner', fetch: checked });
    const [workspace] = await client.workspaces.list({ organizationId: ORG });
    expect(workspace!.createdAt).toBeInstanceOf(Date);
    expect(workspace!.createdAt.toISOString()).toBe('2026-11-21T09:15:00.000Z');
  });

  it('throws one typed error class with code, status and data', async () => {
    const anonymous = createClient({ baseUrl: server.origin, fetch: checked });
    const denied = await anonymous.workspaces.list({ organizationId: ORG }).catch((error: unknown) => error);
    expect(denied).toBeInstanceOf(ApiClientError);
    expect(denied).toMatchObject({ code: 'UNAUTHORIZED', status: 401, defined: true });

    const client = createClient({ baseUrl: server.origin, token: 'usr_owner', fetch: checked });
    const invalid = await client.workspaces.create({ organizationId: ORG, name: 'x', slug: 'NOT A SLUG' }).catch((error: unknown) => error);
    expect(invalid).toMatchObject({ code: 'BAD_REQUEST', status: 400 });
    expect((invalid as ApiClientError).data).toMatchObject({ issues: [expect.objectContaining({ path: ['slug'] })] });
    expect((invalid as ApiClientError).requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('uses the fetch it is given', async () => {
    const seen: string[] = [];
    const client = createClient({ baseUrl: server.origin, fetch: (url, init) => { seen.push(String(url)); return checked(url, init); } });
    await client.system.health();
    expect(seen).toEqual([`${server.origin}/rpc/system/health`]);
  });

  it('exposes jobs.stream as an async iterator of events with Dates', async () => {
    const client = createClient({ baseUrl: server.origin, token: 'usr_owner', fetch: checked });
    const events = [];
    for await (const event of client.jobs.stream({ organizationId: ORG })) events.push(event);
    expect(events.map((e) => e.event)).toEqual(['ready', 'job', 'job', 'end']);
    expect(events.map((e) => e.id)).toEqual([undefined, '1', '2', '2']);
    const [ready, queued, running] = events as { data: Record<string, unknown> }[];
    expect(ready!.data.expiresAt).toBeInstanceOf(Date);
    expect(queued!.data.createdAt).toBeInstanceOf(Date);
    expect(running!.data).toMatchObject({ status: 'running', startedAt: new Date('2026-11-21T09:15:01.000Z') });
  });

  it('a refused stream throws before yielding', async () => {
    const client = createClient({ baseUrl: server.origin, fetch: checked });
    const iterator = client.jobs.stream({ organizationId: ORG });
    await expect(iterator.next()).rejects.toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
  });
});

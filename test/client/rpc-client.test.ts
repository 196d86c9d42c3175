/** The generated typed RPC client against the real server. */
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { jobKindValues } from '../../clients/typescript/src/enums.ts';
import { ApiClientError, createClient, type ProcedureEvent } from '../../clients/typescript/src/index.ts';
import type { ProcedureInput } from '../../generated/procedures.ts';
import type { StreamHandler } from '../../src/context.ts';
import { startTestServer, urlOf, type TestServer } from '../support/server.ts';
import { fakeIdentity } from '../support/fake-identity.ts';

const ORG = 'org_pycdybk377oxtzq6svizx3or';
const DOC = 'doc_zjli6ufh3reosfhypn5nwk2d';
const job = {
  id: 'job_s6kc6o6oya7vngcngsuu4stu',
  organizationId: ORG,
  workspaceId: null,
  documentId: null,
  kind: 'text.embed',
  status: 'queued',
  error: null,
  credits: 1,
  attempt: 0,
  retryOf: null,
  createdBy: 'usr_owner',
  createdAt: new Date('2026-11-21T09:15:00.000Z'),
  startedAt: null,
  finishedAt: null,
  updatedAt: new Date('2026-11-21T09:15:00.000Z'),
};
const stream: StreamHandler = async (_input, _ctx, sink) => {
  sink.send('ready', { expiresAt: new Date('2026-11-21T09:30:00.000Z') });
  sink.send('job', job, '1');
  sink.send('job', { ...job, status: 'running', startedAt: new Date('2026-11-21T09:15:01.000Z') }, '2');
  sink.send('end', { reason: 'expired' });
};

let server: TestServer;
/** Every answer the client gets is checked against the contract too. */
const checked = (url: string | URL | Request, init?: RequestInit) => server.fetch(urlOf(url), init);
beforeAll(async () => {
  server = await startTestServer({
    overrides: {
      ...fakeIdentity({ users: { usr_owner: { organizations: { [ORG]: 'owner' } } } }),
      handlers: {
        'workspaces.list': (input) => [
          { id: 'ws_i5xx2bzn3kir2gshyl7sn5pk', organizationId: input.organizationId, teamId: null, name: 'Research', slug: 'research', createdAt: new Date('2026-11-21T09:15:00.000Z') },
        ],
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
    const client = createClient({
      baseUrl: server.origin,
      fetch: (url, init) => {
        seen.push(urlOf(url));
        return checked(url, init);
      },
    });
    await client.system.health();
    expect(seen).toEqual([`${server.origin}/rpc/system/health`]);
  });

  it('exposes jobs.stream as an async iterator of events with Dates', async () => {
    const client = createClient({ baseUrl: server.origin, token: 'usr_owner', fetch: checked });
    const events: ProcedureEvent<'jobs.stream'>[] = [];
    // reconnect: false, or the iterator would resume after the stand-in stream's `end expired`.
    for await (const event of client.jobs.stream({ organizationId: ORG }, { reconnect: false })) events.push(event);
    expect(events.map((e) => e.event)).toEqual(['ready', 'job', 'job', 'end']);
    expect(events.map((e) => e.id)).toEqual([undefined, '1', '2', '2']);
    const [ready, queued, running, end] = events;
    expect(ready!.event === 'ready' && ready!.data.expiresAt).toBeInstanceOf(Date);
    expect(queued!.event === 'job' && queued!.data.createdAt).toBeInstanceOf(Date);
    expect(running!.data).toMatchObject({ status: 'running', startedAt: new Date('2026-11-21T09:15:01.000Z') });
    expect(end!.data).toEqual({ reason: 'expired' });
  });

  it('types each stream event from the contract: the event name picks the type of its data', () => {
    type Event = ProcedureEvent<'jobs.stream'>;
    // `error` is thrown as an ApiClientError, never yielded.
    expectTypeOf<Event['event']>().toEqualTypeOf<'ready' | 'job' | 'end'>();
    expectTypeOf<Extract<Event, { event: 'ready' }>['data']['expiresAt']>().toEqualTypeOf<Date>();
    expectTypeOf<Extract<Event, { event: 'job' }>['data']['status']>().toEqualTypeOf<'queued' | 'running' | 'succeeded' | 'failed' | 'canceled'>();
    expectTypeOf<Extract<Event, { event: 'job' }>['data']['startedAt']>().toEqualTypeOf<Date | null>();
    expectTypeOf<Extract<Event, { event: 'end' }>['data']['reason']>().toEqualTypeOf<'expired' | 'revoked'>();
    expectTypeOf<Event['id']>().toEqualTypeOf<string | undefined>();
  });

  it('types jobs.create as a union of its kinds, and the server refuses what the type refuses', async () => {
    type Input = ProcedureInput<'jobs.create'>;
    // Every kind of the contract (generated), so a new kind needs no edit here.
    expectTypeOf<Input['kind']>().toEqualTypeOf<(typeof jobKindValues)[number]>();
    expectTypeOf<Extract<Input, { kind: 'text.embed' }>>().not.toHaveProperty('documentId');
    expectTypeOf<Extract<Input, { kind: 'document.index' }>>().not.toHaveProperty('input');
    const client = createClient({ baseUrl: server.origin, token: 'usr_owner', fetch: checked });
    const wrong = {
      // @ts-expect-error a text.embed job takes no documentId
      embedWithDocument: (): Input => ({ organizationId: ORG, kind: 'text.embed', input: { texts: ['a'] }, documentId: DOC }),
      // @ts-expect-error a document.index job needs its documentId
      indexWithoutDocument: (): Input => ({ organizationId: ORG, kind: 'document.index' }),
      // @ts-expect-error a document.extract job takes no input
      extractWithInput: (): Input => ({ organizationId: ORG, kind: 'document.extract', documentId: DOC, input: { texts: ['a'] } }),
    };
    const refused = await Promise.all(Object.values(wrong).map((make) => client.jobs.create(make()).catch((error: unknown) => error)));
    expect(refused.map((error) => (error as ApiClientError).data)).toEqual([
      { issues: [{ path: ['documentId'], message: 'is not a known field' }] },
      { issues: [{ path: ['documentId'], message: "must have required property 'documentId'" }] },
      { issues: [{ path: ['input'], message: 'is not a known field' }] },
    ]);
  });

  it('a refused stream throws before yielding', async () => {
    const client = createClient({ baseUrl: server.origin, fetch: checked });
    const iterator = client.jobs.stream({ organizationId: ORG });
    await expect(iterator.next()).rejects.toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
  });
});

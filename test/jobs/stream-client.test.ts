/**
 * The typed RPC client's jobs.stream iterator: it resumes with Last-Event-Id across the server's
 * lifetime cut and across a dropped connection without missing or repeating an event, finishes
 * when access is revoked, and throws the `error` event.
 */
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type ProcedureEvent } from '../../clients/typescript/src/index.ts';
import { clientFetch, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { closeAll, openJobStream, startStreamServers, writeJob, type EventReader } from './stream-support.ts';

type Event = ProcedureEvent<'jobs.stream'>;

let server: TestServer;
let shortLived: TestServer;
const readers: EventReader[] = [];
beforeAll(async () => ({ server, shortLived } = await startStreamServers()));
afterAll(() => closeAll(readers, server, shortLived));

async function signedIn(target: TestServer): Promise<{ user: TestUser; org: string }> {
  const user = await createUser(target.db);
  return { user, org: await addMembership(target.db, user, 'member') };
}

const clientOf = (target: TestServer, user: TestUser, baseUrl = target.origin) => createClient({ baseUrl, token: user.token, ...(baseUrl === target.origin ? { fetch: clientFetch(target) } : {}) });

/** Reads events (kept in `seen`) until one satisfies `done`. */
async function readUntil(iterator: AsyncGenerator<Event>, seen: Event[], done: (event: Event) => boolean): Promise<void> {
  for (;;) {
    const { value, done: finished } = await iterator.next();
    if (finished) throw new Error('the iterator finished');
    seen.push(value);
    if (done(value)) return;
  }
}

const jobIds = (events: Event[]) => events.filter((event) => event.event === 'job').map((event) => event.id);

/** A TCP relay to the server whose connections the test can cut, as a network failure would. */
async function relay(target: TestServer): Promise<{ origin: string; cut(): void; close(): void }> {
  const { hostname, port } = new URL(target.origin);
  const sockets = new Set<Socket>();
  const proxy = createServer((inbound) => {
    const outbound = connect(Number(port), hostname);
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        inbound.destroy();
        outbound.destroy();
      });
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  const cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    origin: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    cut,
    close() {
      cut();
      proxy.close();
    },
  };
}

describe('the typed client iterator of jobs.stream', () => {
  it('reconnects after end expired and replays what happened meanwhile, each event once', async () => {
    const { user, org } = await signedIn(shortLived);
    const start = await writeJob(shortLived, { organizationId: org });
    const first = await writeJob(shortLived, { organizationId: org });
    const iterator = clientOf(shortLived, user).jobs.stream({ organizationId: org }, { lastEventId: start.eventId, retryDelayMs: 20 });
    const seen: Event[] = [];
    await readUntil(iterator, seen, (event) => event.event === 'end');
    expect(seen.at(-1)).toMatchObject({ event: 'end', data: { reason: 'expired' } });
    // Written while the iterator is between connections.
    const meanwhile = [await writeJob(shortLived, { organizationId: org }), await writeJob(shortLived, { organizationId: org })];
    await readUntil(iterator, seen, (event) => event.id === meanwhile[1]!.eventId);
    await iterator.return(undefined);
    expect(seen[0]).toMatchObject({ event: 'ready' });
    expect(seen[0]!.data).toEqual({ expiresAt: expect.any(Date) });
    expect(jobIds(seen)).toEqual([first.eventId, ...meanwhile.map((job) => job.eventId)]);
    expect(seen.filter((event) => event.event === 'ready').length).toBeGreaterThanOrEqual(2);
  });

  it('resumes after a dropped connection, with the events it missed', async () => {
    const { user, org } = await signedIn(server);
    const network = await relay(server);
    try {
      const iterator = clientOf(server, user, network.origin).jobs.stream({ organizationId: org }, { retryDelayMs: 20 });
      const seen: Event[] = [];
      await readUntil(iterator, seen, (event) => event.event === 'ready');
      const before = await writeJob(server, { organizationId: org });
      await readUntil(iterator, seen, (event) => event.id === before.eventId);
      network.cut();
      const missed = await writeJob(server, { organizationId: org });
      await readUntil(iterator, seen, (event) => event.id === missed.eventId);
      const after = await writeJob(server, { organizationId: org });
      await readUntil(iterator, seen, (event) => event.id === after.eventId);
      await iterator.return(undefined);
      expect(jobIds(seen)).toEqual([before.eventId, missed.eventId, after.eventId]);
      const job = seen.find((event) => event.event === 'job');
      expect(job?.event === 'job' && job.data.createdAt).toBeInstanceOf(Date);
    } finally {
      network.close();
    }
  });

  it('finishes after end revoked instead of reconnecting', async () => {
    const { user, org } = await signedIn(server);
    const iterator = clientOf(server, user).jobs.stream({ organizationId: org }, { retryDelayMs: 20 });
    expect((await iterator.next()).value).toMatchObject({ event: 'ready' });
    await server.db.sql`delete from members where user_id = ${user.id}`;
    const seen: Event[] = [];
    for await (const event of iterator) seen.push(event);
    expect(seen.filter((event) => event.event !== 'job')).toEqual([{ event: 'end', id: undefined, data: { reason: 'revoked' } }]);
  });

  it('throws the error event of a refused stream as an ApiClientError', async () => {
    const { user, org } = await signedIn(server);
    for (let i = 0; i < 5; i += 1) {
      const reader = await openJobStream(readers, server, user, org);
      expect(await reader.nextEvent()).toMatchObject({ event: 'ready' });
    }
    const iterator = clientOf(server, user).jobs.stream({ organizationId: org });
    await expect(iterator.next()).rejects.toMatchObject({ name: 'ApiClientError', code: 'TOO_MANY_REQUESTS', status: 429, defined: true });
  });
});

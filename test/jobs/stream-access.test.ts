/**
 * jobs.stream ends itself: `end revoked` when the periodic re-check finds the access gone
 * (specification, Authentication item 9), `end expired` at the end of its lifetime, and the sixth
 * concurrent stream of a user is refused with an `error` event. Each ended stream frees its slot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { addWorkspace, closeAll, jobEvents, openEvents, openJobStream, readyOnceFree, startStreamServers, writeJob, type EventReader } from './stream-support.ts';

let server: TestServer;
let shortLived: TestServer;
const readers: EventReader[] = [];
beforeAll(async () => ({ server, shortLived } = await startStreamServers()));
afterAll(() => closeAll(readers, server, shortLived));

const open = (target: TestServer, user: TestUser, organizationId: string, query = '') => openJobStream(readers, target, user, organizationId, query);

async function ready(target: TestServer, user: TestUser, organizationId: string, query = ''): Promise<EventReader> {
  const reader = await open(target, user, organizationId, query);
  expect(await reader.nextEvent()).toMatchObject({ event: 'ready' });
  return reader;
}

/** The next event is `end` with `reason`, and the server closes the stream after it. */
async function expectEnd(reader: EventReader, reason: 'revoked' | 'expired'): Promise<void> {
  expect(await reader.nextEvent()).toEqual({ kind: 'event', event: 'end', id: undefined, data: { reason } });
  await reader.closed();
  await expect(reader.next()).rejects.toThrow('the stream ended');
}

async function member(role: 'owner' | 'admin' | 'member' = 'member'): Promise<{ user: TestUser; org: string }> {
  const user = await createUser(server.db);
  return { user, org: await addMembership(server.db, user, role) };
}

describe('jobs.stream re-checks access', () => {
  it('ends with revoked once the member is removed', async () => {
    const { user, org } = await member();
    const reader = await ready(server, user, org);
    await server.db.sql`delete from members where user_id = ${user.id} and organization_id = ${org}`;
    await expectEnd(reader, 'revoked');
  });

  it('ends with revoked once the session is signed out', async () => {
    const { user, org } = await member();
    const reader = await ready(server, user, org);
    const signOut = await server.fetch('/api/auth/sign-out', { method: 'POST', headers: user.headers });
    expect(signOut.status).toBe(200);
    await expectEnd(reader, 'revoked');
  });

  it('ends with revoked once the session has expired', async () => {
    const { user, org } = await member();
    const reader = await ready(server, user, org);
    await server.db.sql`update sessions set expires_at = now() - interval '1 second' where user_id = ${user.id}`;
    await expectEnd(reader, 'revoked');
  });

  it('ends with revoked once the user is banned', async () => {
    const { user, org } = await member();
    const reader = await ready(server, user, org);
    await server.db.sql`update users set banned = true, ban_reason = 'spam' where id = ${user.id}`;
    await expectEnd(reader, 'revoked');
  });

  it('keeps the stream through a role change, as every role may read jobs', async () => {
    const { user, org } = await member('owner');
    const reader = await ready(server, user, org);
    await server.db.sql`update members set role = 'member' where user_id = ${user.id}`;
    // Heartbeats come between re-checks; after several, the stream still carries jobs.
    for (let seen = 0; seen < 3;) if ((await reader.next()).kind === 'comment') seen += 1;
    const job = await writeJob(server, { organizationId: org });
    expect((await jobEvents(reader, 1))[0]!.id).toBe(job.eventId);
  });

  it('a workspace of another organization narrows the stream to nothing', async () => {
    const { user, org } = await member();
    const stranger = await member();
    const theirs = await addWorkspace(server.db, stranger.org);
    const narrowed = await ready(server, user, org, `?workspaceId=${theirs}`);
    const all = await ready(server, user, org);
    await writeJob(server, { organizationId: stranger.org, workspaceId: theirs });
    const ours = await writeJob(server, { organizationId: org });
    expect((await jobEvents(all, 1))[0]!.id).toBe(ours.eventId);
    // Revocation ends both streams; the narrowed one had nothing before its end.
    await server.db.sql`delete from members where user_id = ${user.id}`;
    await expectEnd(narrowed, 'revoked');
  });
});

describe('jobs.stream lifetime and limits', () => {
  it('ends with expired at the end of its lifetime', async () => {
    const user = await createUser(shortLived.db);
    const org = await addMembership(shortLived.db, user, 'member');
    await expectEnd(await ready(shortLived, user, org), 'expired');
  });

  it('refuses the sixth concurrent stream of a user with an error event after the 200', async () => {
    const { user, org } = await member();
    const five = await Promise.all([1, 2, 3, 4, 5].map(() => ready(server, user, org)));
    const sixth = await open(server, user, org);
    expect(sixth.response.status).toBe(200);
    expect(await sixth.next()).toEqual({ kind: 'retry', value: 3000 });
    expect(await sixth.next()).toEqual({
      kind: 'event',
      event: 'error',
      id: undefined,
      data: { defined: true, code: 'TOO_MANY_REQUESTS', status: 429, message: 'Too many concurrent streams (at most 5), close one and try again.' },
    });
    await sixth.closed();
    // Another user is not counted against this one.
    const other = await createUser(server.db);
    await addMembership(server.db, other, 'member', org);
    await ready(server, other, org);

    // A stream the client closes frees its slot once the server notices.
    five[0]!.close();
    await expect(readyOnceFree(() => open(server, user, org))).resolves.toBeDefined();
  });

  it('frees the slot of an RPC stream (a POST) its client closes', async () => {
    const user = await createUser(server.db);
    const org = await addMembership(server.db, user, 'member');
    const rpc = () =>
      openEvents(`${server.origin}/rpc/jobs/stream`, {
        method: 'POST',
        headers: { ...user.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ json: { organizationId: org } }),
      });
    const five = await Promise.all([1, 2, 3, 4, 5].map(rpc));
    readers.push(...five);
    for (const reader of five) expect(await reader.nextEvent()).toMatchObject({ event: 'ready' });
    // The request body was read before the stream opened: only the response's close tells the
    // server that the client left.
    for (const reader of five) reader.close();
    const again = await Promise.all([1, 2, 3, 4, 5].map(() => readyOnceFree(() => open(server, user, org))));
    expect(again).toHaveLength(5);
  });

  it('frees the slots of streams the server ended', async () => {
    const user = await createUser(shortLived.db);
    const org = await addMembership(shortLived.db, user, 'member');
    const first = await Promise.all([1, 2, 3, 4, 5].map(() => ready(shortLived, user, org)));
    for (const reader of first) await expectEnd(reader, 'expired');
    const again = await Promise.all([1, 2, 3, 4, 5].map(() => readyOnceFree(() => open(shortLived, user, org))));
    expect(again).toHaveLength(5);
  });
});

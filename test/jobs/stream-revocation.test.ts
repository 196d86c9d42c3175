/**
 * Revoked access ends open jobs.stream connections at once (specification, Authentication item 9;
 * src/auth/revocations.ts), not at the periodic re-check: here the re-check is a minute apart, so
 * only the revocation's announcement can end a stream within the reader's timeout. Two API
 * instances on one database: with TEST_DATABASE_URL the announcement crosses between them through
 * LISTEN/NOTIFY; on the embedded database both share its one session, to which PGlite delivers the
 * notification once the revoking transaction commits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { createSession } from '../../src/auth/sessions.ts';
import type { TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { closeAll, jobEvents, openJobStream, startTwoInstances, writeJob, type EventReader } from './stream-support.ts';

let db: Database, secondDb: Database;
let a: TestServer, b: TestServer;
const readers: EventReader[] = [];

beforeAll(async () => {
  ({ db, secondDb, a, b } = await startTwoInstances({ timing: { recheckMs: 60_000 }, env: { AUTH_RATE_LIMIT_PER_MINUTE: '100000' } }));
});
afterAll(() => closeAll(readers, a, b, secondDb, db));

async function ready(server: TestServer, user: Pick<TestUser, 'headers'>, organizationId: string): Promise<EventReader> {
  const reader = await openJobStream(readers, server, user, organizationId);
  expect(reader.response.status).toBe(200);
  expect(await reader.nextEvent()).toMatchObject({ event: 'ready' });
  return reader;
}

/** The next event is `end revoked`, and the server closes the stream after it. */
async function expectRevoked(reader: EventReader): Promise<void> {
  expect(await reader.nextEvent()).toEqual({ kind: 'event', event: 'end', id: undefined, data: { reason: 'revoked' } });
  await reader.closed();
}

const post = (server: TestServer, path: string, as: Pick<TestUser, 'headers'>, body?: unknown) =>
  server.fetch(`/api/auth${path}`, {
    method: 'POST',
    headers: { ...as.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

/** A second session of the same user, as a second device would hold. */
async function secondDevice(user: TestUser): Promise<Pick<TestUser, 'headers'>> {
  const { token } = await createSession(db.sql, { userId: user.id, now: new Date() });
  return { headers: { authorization: `Bearer ${token}` } };
}

describe('revoked access ends open job streams at once, on every instance', () => {
  it('a member removed from the organization', async () => {
    const owner = await createUser(db);
    const org = await addMembership(db, owner, 'owner');
    const member = await createUser(db);
    await addMembership(db, member, 'member', org);
    const elsewhere = await addMembership(db, member, 'member');
    const [onA, onB, ownerOnB, otherOrgOnB] = [await ready(a, member, org), await ready(b, member, org), await ready(b, owner, org), await ready(b, member, elsewhere)];

    const removed = await post(a, '/organization/remove-member', owner, { organizationId: org, memberIdOrEmail: member.email });
    expect(removed.status).toBe(200);
    await expectRevoked(onA);
    await expectRevoked(onB);
    // The owner's stream, and the member's stream of another organization, go on.
    const job = await writeJob(db, { organizationId: org });
    expect((await jobEvents(ownerOnB, 1))[0]!.id).toBe(job.eventId);
    const theirs = await writeJob(db, { organizationId: elsewhere });
    expect((await jobEvents(otherOrgOnB, 1))[0]!.id).toBe(theirs.eventId);
  });

  it("a session signed out, while the same user's other session keeps its stream", async () => {
    const user = await createUser(db);
    const org = await addMembership(db, user, 'member');
    const other = await secondDevice(user);
    const [onA, onB, otherOnB] = [await ready(a, user, org), await ready(b, user, org), await ready(b, other, org)];

    expect((await post(a, '/sign-out', user)).status).toBe(200);
    await expectRevoked(onA);
    await expectRevoked(onB);
    const job = await writeJob(db, { organizationId: org });
    expect((await jobEvents(otherOnB, 1))[0]!.id).toBe(job.eventId);
  });

  it("every other session revoked, while the caller's own keeps its stream", async () => {
    const user = await createUser(db);
    const org = await addMembership(db, user, 'member');
    const other = await secondDevice(user);
    const [mine, theirs] = [await ready(a, user, org), await ready(b, other, org)];

    expect((await post(b, '/revoke-other-sessions', user)).status).toBe(200);
    await expectRevoked(theirs);
    const job = await writeJob(db, { organizationId: org });
    expect((await jobEvents(mine, 1))[0]!.id).toBe(job.eventId);
  });

  it('a user banned by a platform admin', async () => {
    const admin = await createUser(db, { role: 'admin' });
    const user = await createUser(db);
    const org = await addMembership(db, user, 'member');
    const other = await secondDevice(user);
    const [onA, onB, otherOnA] = [await ready(a, user, org), await ready(b, user, org), await ready(a, other, org)];

    const banned = await post(b, '/admin/ban-user', admin, { userId: user.id, banReason: 'Spam.' });
    expect(banned.status).toBe(200);
    for (const reader of [onA, onB, otherOnA]) await expectRevoked(reader);
  });
});

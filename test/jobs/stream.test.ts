/**
 * jobs.stream over REST: what a stream carries and in which order (decisions.md, "Job event
 * stream"): `retry: 3000`, `ready`, live `job` events with increasing ids, the workspace filter,
 * Last-Event-Id resumes, heartbeats. Every event is checked against the contract by the server
 * (VALIDATE_RESPONSES is on in tests).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { addWorkspace, FAST, jobEvents, openEvents, startStreamServer, writeJob, type EventReader } from './stream-support.ts';

const clock = new Date();
let server: TestServer;
let owner: TestUser;
let org: string;
let otherOrg: string;
const readers: EventReader[] = [];

beforeAll(async () => {
  server = await startStreamServer({ overrides: { now: () => clock } });
  org = await addMembership(server.db, await createUser(server.db), 'owner');
  otherOrg = await addMembership(server.db, await createUser(server.db), 'owner');
});
// A member of its own per test: the streams a test leaves open never count against the next.
beforeEach(async () => {
  owner = await createUser(server.db);
  await addMembership(server.db, owner, 'member', org);
});
afterEach(() => {
  for (const reader of readers.splice(0)) reader.close();
});
afterAll(() => server?.close());

async function open(query = '', headers: Record<string, string> = {}, organizationId = org): Promise<EventReader> {
  const reader = await openEvents(`${server.origin}/api/v1/organizations/${organizationId}/jobs/stream${query}`, { headers: { ...owner.headers, ...headers } });
  readers.push(reader);
  return reader;
}

/** Opens a stream and reads up to its `ready` event. */
async function ready(query = '', headers: Record<string, string> = {}): Promise<EventReader> {
  const reader = await open(query, headers);
  expect(await reader.next()).toEqual({ kind: 'retry', value: 3000 });
  expect(await reader.next()).toMatchObject({ kind: 'event', event: 'ready' });
  return reader;
}

describe('jobs.stream', () => {
  it('opens with the retry line, then ready with the end of its lifetime', async () => {
    const reader = await open();
    expect(reader.response.status).toBe(200);
    expect(reader.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(await reader.next()).toEqual({ kind: 'retry', value: 3000 });
    expect(await reader.next()).toEqual({
      kind: 'event',
      event: 'ready',
      id: undefined,
      data: { expiresAt: new Date(clock.getTime() + FAST.lifetimeMs).toISOString() },
    });
  });

  it('carries each job change live, in order, with increasing ids; input only once finished', async () => {
    const reader = await ready();
    const job = await writeJob(server, { organizationId: org });
    const running = await writeJob(server, { organizationId: org, id: job.id, status: 'running' });
    const done = await writeJob(server, { organizationId: org, id: job.id, status: 'succeeded' });
    const events = await jobEvents(reader, 3);
    expect(events.map((event) => event.id)).toEqual([job.eventId, running.eventId, done.eventId]);
    expect(events.map((event) => [event.data.id, event.data.status])).toEqual([
      [job.id, 'queued'],
      [job.id, 'running'],
      [job.id, 'succeeded'],
    ]);
    expect(events[0]!.data).not.toHaveProperty('input');
    expect(events[2]!.data.input).toEqual({ texts: ['hello'] });
    expect(BigInt(events[0]!.id!) < BigInt(events[1]!.id!) && BigInt(events[1]!.id!) < BigInt(events[2]!.id!)).toBe(true);
  });

  it('starts after the newest event when there is no Last-Event-Id', async () => {
    await writeJob(server, { organizationId: org });
    const reader = await ready();
    const next = await writeJob(server, { organizationId: org });
    expect((await jobEvents(reader, 1))[0]!.id).toBe(next.eventId);
  });

  it("starts after the newest event even while the app's reader lags behind the log", async () => {
    // No poll during the test: the reader learns of events only when this process announces them.
    const lagging = await startStreamServer({ timing: { pollMs: 3_600_000 } });
    try {
      const user = await createUser(lagging.db);
      const organizationId = await addMembership(lagging.db, user, 'member');
      const open = async () => {
        const reader = await openEvents(`${lagging.origin}/api/v1/organizations/${organizationId}/jobs/stream`, { headers: user.headers });
        readers.push(reader);
        expect(await reader.nextEvent()).toMatchObject({ event: 'ready' });
        return reader;
      };
      const early = await open();
      const unannounced = await writeJob(lagging, { organizationId }, { announce: false });
      const late = await open();
      const next = await writeJob(lagging, { organizationId });
      expect((await jobEvents(early, 2)).map((event) => event.id)).toEqual([unannounced.eventId, next.eventId]);
      expect((await jobEvents(late, 1)).map((event) => event.id)).toEqual([next.eventId]);
    } finally {
      await lagging.close();
    }
  });

  it('shows only its organization, and only the workspace asked for', async () => {
    const [wanted, other] = [await addWorkspace(server.db, org), await addWorkspace(server.db, org)];
    const all = await ready();
    const narrowed = await ready(`?workspaceId=${wanted}`);
    await writeJob(server, { organizationId: otherOrg });
    const elsewhere = await writeJob(server, { organizationId: org, workspaceId: other });
    const inside = await writeJob(server, { organizationId: org, workspaceId: wanted });
    expect((await jobEvents(all, 2)).map((event) => event.id)).toEqual([elsewhere.eventId, inside.eventId]);
    expect((await jobEvents(narrowed, 1)).map((event) => [event.id, event.data.workspaceId])).toEqual([[inside.eventId, wanted]]);
  });

  it('resumes after Last-Event-Id: the retained events of the organization, then live ones, each once', async () => {
    const before = await writeJob(server, { organizationId: org });
    const missed = [await writeJob(server, { organizationId: org }), await writeJob(server, { organizationId: org })];
    await writeJob(server, { organizationId: otherOrg });
    // Writes while the stream opens land on either side of the hand-over from replay to live.
    const opening = ready('', { 'last-event-id': before.eventId });
    const racing = await Promise.all([1, 2, 3].map(() => writeJob(server, { organizationId: org })));
    const reader = await opening;
    const live = await writeJob(server, { organizationId: org });
    const expected = [...missed, ...racing, live].map((job) => job.eventId).sort((a, b) => Number(a) - Number(b));
    expect((await jobEvents(reader, expected.length)).map((event) => event.id)).toEqual(expected);
  });

  it('hands a long replay over to live events without losing or repeating one', async () => {
    await ready(); // keeps the app's reader running, so it delivers while the replay pages
    const from = await writeJob(server, { organizationId: org });
    // Many retained events (copies of one job event): the replay reads them page by page.
    await server.db.sql`
      insert into job_events (organization_id, workspace_id, job_id, data)
      select organization_id, workspace_id, job_id, data from job_events, generate_series(1, 600) where id = ${from.eventId}::bigint`;
    const opening = ready('', { 'last-event-id': from.eventId });
    const during: string[] = [];
    for (let i = 0; i < 5; i += 1) during.push((await writeJob(server, { organizationId: org })).eventId);
    const reader = await opening;
    const [row] = await server.db.sql<{ ids: string[] }[]>`
      select array_agg(id::text order by id) as ids from job_events where organization_id = ${org} and id > ${from.eventId}::bigint`;
    const ids = row!.ids;
    expect(ids).toEqual(expect.arrayContaining(during));
    // One by one, so the first event out of place fails at once.
    for (const id of ids) expect(await reader.nextEvent()).toMatchObject({ event: 'job', id });
  });

  it('over RPC too, with the Last-Event-Id header', async () => {
    const before = await writeJob(server, { organizationId: org });
    const missed = await writeJob(server, { organizationId: org });
    const reader = await openEvents(`${server.origin}/rpc/jobs/stream`, {
      method: 'POST',
      headers: { ...owner.headers, 'content-type': 'application/json', 'last-event-id': before.eventId },
      body: JSON.stringify({ json: { organizationId: org } }),
    });
    readers.push(reader);
    expect(reader.response.status).toBe(200);
    expect(await reader.next()).toEqual({ kind: 'retry', value: 3000 });
    expect(await reader.nextEvent()).toMatchObject({ event: 'ready' });
    const live = await writeJob(server, { organizationId: org });
    expect((await jobEvents(reader, 2)).map((event) => event.id)).toEqual([missed.eventId, live.eventId]);
  });

  it.each([
    ['not an event id', 'abc'],
    ['an id past the newest event', '9000000000000000000'],
    ['a number beyond any event id', '99999999999999999999'],
  ])('treats %s as no resume point: the stream starts live', async (_case, lastEventId) => {
    await writeJob(server, { organizationId: org });
    const reader = await ready('', { 'last-event-id': lastEventId });
    const next = await writeJob(server, { organizationId: org });
    expect((await jobEvents(reader, 1))[0]!.id).toBe(next.eventId);
  });

  it('sends a comment line between events to keep proxies from closing the stream', async () => {
    const reader = await ready();
    let frame = await reader.next();
    while (frame.kind !== 'comment') frame = await reader.next();
    expect(frame).toEqual({ kind: 'comment', text: 'keep-alive' });
  });

  it('should require access: 401 without a session, 403 in an organization the caller is not in', async () => {
    const anonymous = await fetch(`${server.origin}/api/v1/organizations/${org}/jobs/stream`);
    expect(anonymous.status).toBe(401);
    const stranger = await server.fetch(`/api/v1/organizations/${otherOrg}/jobs/stream`, { headers: owner.headers });
    expect(stranger.status).toBe(403);
    expect(await stranger.json()).toMatchObject({ code: 'FORBIDDEN' });
  });
});

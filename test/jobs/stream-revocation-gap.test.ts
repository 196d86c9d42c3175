/**
 * A revocation committed between the binding layer's access check and the stream's revocation
 * watch (docs/job-stream.md, Revocation): its announcement went out while nobody listened, so only
 * a check after the watch is registered can see it. The real jobs.stream handler runs behind a
 * wrapper that removes the member at exactly that point (after the check, before the handler
 * registers its watch); the periodic re-check is a minute apart, so only that check can end the
 * stream within the test.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { StreamHandlers } from '../../src/context.ts';
import { jobStreamProcedures } from '../../src/jobs/stream.ts';
import type { TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { closeAll, jobEvents, openJobStream, startStreamServer, writeJob, type EventReader } from './stream-support.ts';

let server: TestServer;
const readers: EventReader[] = [];
/** Run once by the next stream, after its access check and before the real handler. */
let beforeHandler: (() => Promise<void>) | undefined;

const streams: StreamHandlers = {
  'jobs.stream': async (input, ctx, sink) => {
    const hook = beforeHandler;
    beforeHandler = undefined;
    await hook?.();
    return jobStreamProcedures['jobs.stream']!(input, ctx, sink);
  },
};

beforeAll(async () => {
  server = await startStreamServer({ timing: { recheckMs: 60_000 }, env: { AUTH_RATE_LIMIT_PER_MINUTE: '100000' }, overrides: { streams } });
});
afterAll(() => closeAll(readers, server));

async function removeMember(owner: TestUser, organizationId: string, member: TestUser): Promise<void> {
  const removed = await server.fetch('/api/auth/organization/remove-member', {
    method: 'POST',
    headers: { ...owner.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ organizationId, memberIdOrEmail: member.email }),
  });
  expect(removed.status).toBe(200);
}

it('a member removed after the access check and before the watch: the stream ends revoked, before ready', async () => {
  const owner = await createUser(server.db);
  const org = await addMembership(server.db, owner, 'owner');
  const member = await createUser(server.db);
  await addMembership(server.db, member, 'member', org);

  beforeHandler = () => removeMember(owner, org, member);
  const reader = await openJobStream(readers, server, member, org);
  expect(reader.response.status).toBe(200);
  expect(await reader.nextEvent()).toEqual({ kind: 'event', event: 'end', id: undefined, data: { reason: 'revoked' } });
  await reader.closed();
  expect(beforeHandler).toBeUndefined();
});

it('a member who keeps access gets ready and the job events as before', async () => {
  const owner = await createUser(server.db);
  const org = await addMembership(server.db, owner, 'owner');
  const member = await createUser(server.db);
  await addMembership(server.db, member, 'member', org);
  const bystander = await createUser(server.db);
  await addMembership(server.db, bystander, 'member', org);

  // Another member's removal at that point concerns this stream's organization, not its access.
  beforeHandler = () => removeMember(owner, org, bystander);
  const reader = await openJobStream(readers, server, member, org);
  expect(await reader.nextEvent()).toMatchObject({ event: 'ready' });
  const job = await writeJob(server.db, { organizationId: org });
  expect((await jobEvents(reader, 1))[0]!.id).toBe(job.eventId);
});

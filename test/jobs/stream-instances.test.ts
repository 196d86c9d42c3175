/**
 * Two API instances on one database: a stream on either sees the events appended through the
 * other's connection, with no in-process wake (as a worker in another process would append them):
 * LISTEN on an external database (`make test-pg`), the poll on the embedded one, where both
 * instances share its single client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { externalDatabaseUrl } from '../support/database.ts';
import type { TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { closeAll, jobEvents, openJobStream, startTwoInstances, writeJob, type EventReader } from './stream-support.ts';

let db: Database, secondDb: Database;
let a: TestServer, b: TestServer;
let user: TestUser;
let org: string;
const readers: EventReader[] = [];

beforeAll(async () => {
  // On an external database no poll runs during the test: only LISTEN can bring the other's events.
  ({ db, secondDb, a, b } = await startTwoInstances({ timing: { pollMs: externalDatabaseUrl ? 3_600_000 : 50 } }));
  user = await createUser(db);
  org = await addMembership(db, user, 'member');
});
afterAll(() => closeAll(readers, a, b, secondDb, db));

async function ready(server: TestServer): Promise<EventReader> {
  const reader = await openJobStream(readers, server, user, org);
  expect(await reader.nextEvent()).toMatchObject({ event: 'ready' });
  return reader;
}

describe('jobs.stream across two API instances', () => {
  it('each sees the events appended through the other', async () => {
    const [onA, onB] = [await ready(a), await ready(b)];
    const viaA = await writeJob(a.db, { organizationId: org }, { announce: false });
    const viaB = await writeJob(b.db, { organizationId: org }, { announce: false });
    for (const reader of [onA, onB]) {
      expect((await jobEvents(reader, 2)).map((event) => event.id)).toEqual([viaA.eventId, viaB.eventId]);
    }
  });
});

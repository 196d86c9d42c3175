/**
 * `Database.listen` (src/db/connection.ts), on whichever database the suite runs: the embedded one,
 * where the one session LISTENs and PGlite delivers it its own notifications, or a server (with
 * TEST_DATABASE_URL), where postgres.js keeps a listening connection. Revocations reach open job
 * streams this way on both (src/auth/revocations.ts), so what a listener hears must be what
 * committed, on its own database only.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { createTestDatabase } from '../support/database.ts';

let db: Database;
let other: Database;

beforeAll(async () => {
  db = await createTestDatabase();
  other = await createTestDatabase();
});
afterAll(async () => {
  await other?.close();
  await db?.close();
});

async function listenTo(target: Database, channel: string) {
  const heard: string[] = [];
  let listened = 0;
  const stop = await target.listen(
    channel,
    (payload) => heard.push(payload),
    () => (listened += 1),
  );
  return { heard, stop, listened: () => listened };
}

/** Waits (at most about 5 s) until `heard` holds `payload`. */
async function until(heard: string[], payload: string): Promise<void> {
  for (let i = 0; i < 500 && !heard.includes(payload); i++) await sleep(10);
  expect(heard).toContain(payload);
}

describe('Database.listen', () => {
  it('hears a notification once its transaction commits, and never one that rolled back', async () => {
    const listener = await listenTo(db, 'listen_commit');
    expect(listener.listened()).toBe(1);
    await db.sql.begin(async (tx) => {
      await tx`select pg_notify('listen_commit', 'committed')`;
      await sleep(100);
      expect(listener.heard).toEqual([]);
    });
    await until(listener.heard, 'committed');

    await expect(
      db.sql.begin(async (tx) => {
        await tx`select pg_notify('listen_commit', 'rolled back')`;
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    // Sent after the rolled-back one: once it is heard, the other would have been too.
    await db.sql`select pg_notify('listen_commit', 'after')`;
    await until(listener.heard, 'after');
    expect(listener.heard).toEqual(['committed', 'after']);
    listener.stop();
  });

  it('hears its own database only, on the channel it listens to', async () => {
    const mine = await listenTo(db, 'listen_scope');
    const theirs = await listenTo(other, 'listen_scope');
    const otherChannel = await listenTo(db, 'listen_scope_other');
    await db.sql`select pg_notify('listen_scope', 'for db')`;
    await other.sql`select pg_notify('listen_scope', 'for other')`;
    await until(mine.heard, 'for db');
    await until(theirs.heard, 'for other');
    expect(mine.heard).toEqual(['for db']);
    expect(theirs.heard).toEqual(['for other']);
    expect(otherChannel.heard).toEqual([]);
    for (const listener of [mine, theirs, otherChannel]) listener.stop();
  });

  it('stops calling a listener once it is stopped, while another on the channel still hears', async () => {
    const stopped = await listenTo(db, 'listen_stop');
    const kept = await listenTo(db, 'listen_stop');
    stopped.stop();
    await db.sql`select pg_notify('listen_stop', 'later')`;
    await until(kept.heard, 'later');
    expect(stopped.heard).toEqual([]);
    kept.stop();
  });
});

/**
 * pg-boss's statements through our postgres.js client (src/jobs/pg-boss-adapter.ts). pg-boss is
 * written for node-postgres, which sends a string parameter as it is: where pg-boss casts a
 * parameter to json or jsonb it passes JSON it has already encoded, and that text must arrive as
 * the document, not as a JSON string of it. The schedule pass is the statement that broke
 * (`json_to_recordset($1::json)`: "cannot call json_to_recordset on a scalar", logged at every
 * housekeeping run on the embedded database).
 */
import { Writable } from 'node:stream';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { bossDb } from '../../src/jobs/pg-boss-adapter.ts';
import { QUEUE_SCHEMA } from '../../src/jobs/queue.ts';
import { createLogger } from '../../src/logger.ts';
import { createTestDatabase } from '../support/database.ts';

describe('parameters', () => {
  // Either database: enqueueing goes through the adapter on both.
  let db: Database;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.close());

  const document = [{ name: 'housekeeping', key: '', jobId: '2b0a3a9e-1c6f-4d5e-9f80-0a1b2c3d4e5f' }];
  const cases: { name: string; text: string; values: unknown[]; want: unknown }[] = [
    { name: 'JSON text cast to json', text: 'select $1::json as v', values: [JSON.stringify(document)], want: document },
    { name: 'JSON text cast to jsonb', text: 'select $1::jsonb as v', values: [JSON.stringify({ value: 1 })], want: { value: 1 } },
    { name: 'JSON text cast to jsonb, twice', text: 'select case when $2::jsonb is null then null else $2::jsonb end as v, $1 as w', values: ['x', '{"a":[1,2]}'], want: { a: [1, 2] } },
    { name: 'JSON text cast through text', text: 'select $1::text::json as v', values: ['{"a":1}'], want: { a: 1 } },
    { name: 'a JSON string scalar, meant as one', text: 'select $1::jsonb as v', values: ['"just text"'], want: 'just text' },
    { name: 'an object for a jsonb parameter', text: 'select $1::jsonb as v', values: [{ retryLimit: 2 }], want: { retryLimit: 2 } },
    { name: 'null for a jsonb parameter', text: 'select $1::jsonb as v', values: [null], want: null },
    { name: 'text that looks like JSON stays text', text: 'select $1 as v', values: ['{"a":1}'], want: '{"a":1}' },
    {
      name: 'a json cast on the tenth parameter, not the first',
      text: 'select $10::json as v, array[$1, $2, $3, $4, $5, $6, $7, $8, $9]::text[] as w',
      values: ['{}', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', '[1]'],
      want: [1],
    },
  ];
  it.each(cases)('$name', async ({ text, values, want }) => {
    const { rows } = await bossDb(db.sql).executeSql(text, values);
    expect((rows[0] as { v: unknown }).v).toEqual(want);
  });

  it('fills in json_to_recordset as pg-boss does when it records a schedule', async () => {
    const { rows } = await bossDb(db.sql).executeSql('select * from json_to_recordset($1::json) as x (name text, key text, "jobId" uuid)', [JSON.stringify(document)]);
    expect(rows).toEqual(document);
  });
});

describe('a scheduled run', () => {
  // The embedded database: there pg-boss runs every statement through the adapter (on a server it
  // has a pool of its own, and only enqueueing goes through the adapter).
  let db: Database;
  beforeAll(async () => {
    db = await createTestDatabase({ embedded: true });
  });
  afterAll(() => db?.close());

  it('fires, delivers its job and records it on the schedule, with no error logged', async () => {
    const logs: Record<string, any>[] = [];
    const logger = createLogger(
      'info',
      new Writable({
        write(chunk, _encoding, done) {
          for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line));
          done();
        },
      }),
    );
    // queue.ts's pg-boss settings, with the schedule pass every second instead of every 30 (cron
    // has minute granularity: `* * * * *` is due on the first pass that sees it).
    const boss = new PgBoss({ db: bossDb(db.sql), schema: QUEUE_SCHEMA, supervise: false, schedule: true, cronMonitorIntervalSeconds: 1, cronWorkerIntervalSeconds: 1 });
    boss.on('error', (error) => logger.error({ err: error }, 'job queue error'));
    await boss.start();
    try {
      await boss.createQueue('tick');
      await boss.schedule('tick', '* * * * *', { run: 1 }, { key: 'tick' });
      const delivered = new Promise<{ id: string; data: unknown }>((resolve) => {
        void boss.work('tick', { pollingIntervalSeconds: 0.5 }, async ([job]) => resolve(job!));
      });
      const job = await delivered;
      expect(job.data).toEqual({ run: 1 });
      await expect.poll(async () => (await boss.getSchedules('tick', 'tick'))[0]?.lastJobId, { timeout: 10_000 }).toBe(job.id);
      expect(logs.filter((line) => line.level >= 50)).toEqual([]);
    } finally {
      await boss.stop({ graceful: false, close: false });
    }
  });
});

describe('a transaction block that fails', () => {
  // The embedded database: its one session is shared by pg-boss and every request.
  let db: Database;
  beforeAll(async () => {
    db = await createTestDatabase({ embedded: true });
  });
  afterAll(() => db?.close());

  it('is rolled back, so the shared session is not left inside the aborted transaction', async () => {
    await expect(bossDb(db.sql).executeSql('\n  BEGIN;\n  SET LOCAL lock_timeout = 1000;\n  SELECT 1 / 0;\n  COMMIT;\n')).rejects.toThrow(/division by zero/);
    expect(await db.sql`select 1 as one`).toEqual([{ one: 1 }]);
    // A failing statement outside a block is left as it is: there is no transaction to end.
    await expect(bossDb(db.sql).executeSql('SELECT 1 / 0')).rejects.toThrow(/division by zero/);
    expect(await db.sql`select 2 as two`).toEqual([{ two: 2 }]);
  });
});

// The embedded server must survive the concurrency a busy service produces:
// many queries in flight at once, transactions among them, some failing. All
// of it goes through one postgres.js connection (see src/db/connection.ts);
// this is the test that shows that path holds up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { createTestDatabase } from '../support/database.ts';

let db: Database;
beforeAll(async () => {
  db = await createTestDatabase({ fresh: true });
  await db.sql`create table counters (id int primary key, value int not null)`;
  await db.sql`insert into counters select g, 0 from generate_series(1, 10) g`;
  await db.sql`create table events (id int primary key, counter_id int not null, payload text not null)`;
});
afterAll(() => db?.close());

const operations = 200;

describe('embedded database under concurrent load', () => {
  it(`answers ${operations} concurrent queries and transactions correctly`, { timeout: 60_000 }, async () => {
    const { sql } = db;
    const started = performance.now();
    const results = await Promise.allSettled(
      Array.from({ length: operations }, async (_, i) => {
        switch (i % 5) {
          case 0: {
            // Plain query with parameters: the answer must be this query's, not a neighbour's.
            const [row] = await sql`select ${i}::int as i, ${`text ${i}`}::text as t`;
            expect(row).toEqual({ i, t: `text ${i}` });
            return 'select';
          }
          case 1: {
            // Transaction with a read-modify-write on a shared row.
            const counter = (i % 10) + 1;
            await sql.begin(async (tx) => {
              await tx`insert into events (id, counter_id, payload) values (${i}, ${counter}, ${'event ' + i})`;
              await tx`update counters set value = value + 1 where id = ${counter}`;
              // Two queries in flight at once inside the transaction (pipelined).
              const [[row], [own]] = await Promise.all([tx`select payload from events where id = ${i}`, tx`select count(*)::int as n from events where id = ${i}`]);
              expect(row!.payload).toBe(`event ${i}`);
              expect(own!.n).toBe(1);
            });
            return 'committed';
          }
          case 2: {
            // Transaction that fails after writing: nothing of it may remain.
            await expect(
              sql.begin(async (tx) => {
                await tx`insert into events (id, counter_id, payload) values (${i}, 1, 'rolled back')`;
                await tx`select 1 / 0`;
              }),
            ).rejects.toThrow(/division by zero/);
            return 'rolled back';
          }
          case 3: {
            // A failing statement outside a transaction must not disturb the others.
            await expect(sql`select * from no_such_table`).rejects.toThrow(/does not exist/);
            return 'error';
          }
          case 4: {
            if (i % 20 === 4) {
              // A 1 MB parameter and result: messages split over many TCP reads and writes.
              const big = `${i}:`.padEnd(1_000_000, 'x');
              const [row] = await sql`select ${big}::text as big, length(${big}::text) as n`;
              expect(row!.n).toBe(1_000_000);
              expect(row!.big === big).toBe(true);
              return 'big';
            }
            // A larger result, to interleave long responses with short ones.
            const rows = await sql`select g as n from generate_series(1, ${500 + i}) g`;
            expect(rows).toHaveLength(500 + i);
            expect(rows.at(-1)!.n).toBe(500 + i);
            return 'series';
          }
          default:
            throw new Error('unreachable');
        }
      }),
    );
    const failures = results.filter((result) => result.status === 'rejected');
    expect(failures).toEqual([]);

    const [events] = await sql`select count(*)::int as n, count(*) filter (where payload = 'rolled back')::int as leaked from events`;
    expect(events).toEqual({ n: operations / 5, leaked: 0 });
    const [counters] = await sql`select sum(value)::int as total from counters`;
    expect(counters!.total).toBe(operations / 5);

    // Log the rate so a regression in the embedded path is visible in test output.
    console.info(`${operations} concurrent operations in ${Math.round(performance.now() - started)} ms`);
  });
});

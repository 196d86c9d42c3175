/**
 * src/db/transaction-guard.ts: a pool query inside an open transaction fails at once instead of
 * waiting for ever for the embedded database's one connection (or taking a second one on a server);
 * `tx` inside and the pool outside work as before; a transaction whose connection is lost sends
 * nothing more (real server only: TEST_DATABASE_URL); queries and transactions past their deadline
 * (src/db/deadline.ts) answer at once, and what they leave behind does no harm; background work
 * (request-gate.ts asBackground) waits at the gate before each statement and transaction it starts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/connection.ts';
import { DatabaseDeadlineError, withDeadline } from '../../src/db/deadline.ts';
import { insideTransaction, TransactionGuardError, TransactionLostError } from '../../src/db/transaction-guard.ts';
import type { Db } from '../../src/db/db.ts';
import { asBackground, type RequestGate } from '../../src/db/request-gate.ts';
import { createTestDatabase } from '../support/database.ts';

/** Fails instead of hanging: the promise must settle within `ms`. */
function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms);
  });
  return Promise.race([promise, hung]).finally(() => clearTimeout(timer));
}

let db: Database;
beforeAll(async () => {
  db = await createTestDatabase({ embedded: true, fresh: true });
  await db.sql`create table guard_notes (id int primary key, note text)`;
});
afterAll(() => db?.close());

describe('the transaction guard on the embedded database (one connection)', () => {
  it('makes a pool query inside a transaction fail at once, and the transaction roll back', async () => {
    const { sql } = db;
    expect(sql.options.max).toBe(1);
    const started = performance.now();
    const outcome = sql.begin(async (tx) => {
      await tx`insert into guard_notes values (1, 'rolled back')`;
      expect(insideTransaction()).toBe(true);
      await sql`select count(*) from guard_notes`; // the mistake: sql instead of tx
    });
    await expect(within(2000, outcome)).rejects.toThrow(TransactionGuardError);
    await expect(outcome).rejects.toThrow(/called on the pool inside an open transaction.*use only tx/s);
    await expect(outcome).rejects.toThrow(/select count\(\*\) from guard_notes/);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(insideTransaction()).toBe(false);
    // Nothing of it stayed, and the pool is still usable.
    expect(await sql`select id from guard_notes`).toEqual([]);
  });

  it("refuses the pool's unsafe, begin, reserve and notify inside, and tx still works after", async () => {
    const { sql } = db;
    const answer = await within(
      5000,
      sql.begin(async (tx) => {
        await expect(sql.unsafe('select 1')).rejects.toThrow(TransactionGuardError);
        await expect(sql.begin(async () => {})).rejects.toThrow(/sql\.begin\(\) called on the pool/);
        await expect(sql.reserve()).rejects.toThrow(/sql\.reserve\(\) called on the pool/);
        await expect(sql.notify('channel', 'payload')).rejects.toThrow(/sql\.notify\(\) called on the pool/);
        // Promise.all and a query made before but first awaited inside count too.
        const early = sql`select 1`;
        await expect(Promise.all([early])).rejects.toThrow(TransactionGuardError);
        await tx`insert into guard_notes values (2, 'kept')`;
        return 'committed';
      }),
    );
    expect(answer).toBe('committed');
    expect(await sql`select note from guard_notes where id = 2`).toEqual([{ note: 'kept' }]);
  });

  it('also catches the pool used deep inside a helper called in the transaction', async () => {
    const { sql } = db;
    const countNotes = async (client: Db) => (await client`select count(*)::int as n from guard_notes`)[0]!.n as number;
    await expect(
      within(
        2000,
        sql.begin(async () => countNotes(sql)),
      ),
    ).rejects.toThrow(TransactionGuardError);
    expect(await sql.begin((tx) => countNotes(tx))).toBeGreaterThanOrEqual(1);
  });

  it('leaves normal use of tx alone: pipelining, savepoints, arrays of queries, pool fragments and helpers', async () => {
    const { sql } = db;
    const result = await sql.begin(async (tx) => {
      const [[a], [b]] = await Promise.all([tx`select 1 as n`, tx`select 2 as n`]);
      await tx.savepoint(async (sp) => {
        await sp`insert into guard_notes values (3, 'in a savepoint')`;
      });
      await expect(
        tx.savepoint(async (sp) => {
          await sp`insert into guard_notes values (4, 'undone')`;
          throw new Error('undo the savepoint');
        }),
      ).rejects.toThrow('undo the savepoint');
      // Fragments and helpers made with the pool send nothing themselves.
      const where = sql`where id = ${3}`;
      const [row] = await tx`select note from guard_notes ${where}`;
      await tx`insert into guard_notes ${sql({ id: 5, note: 'helper' })}`;
      const [unsafe] = await tx`select ${sql.unsafe('42')}::int as n`;
      return { a: a!.n, b: b!.n, note: row!.note, unsafe: unsafe!.n };
    });
    expect(result).toEqual({ a: 1, b: 2, note: 'in a savepoint', unsafe: 42 });
    const rows = await sql.begin((tx) => [tx`select 'x' as v`, tx`select id from guard_notes where id in (3, 4, 5) order by id`]);
    expect(rows[0]).toEqual([{ v: 'x' }]);
    expect(rows[1]).toEqual([{ id: 3 }, { id: 5 }]);
  });

  it('leaves the pool alone outside: other requests while a transaction is open, and timers the callback started', async () => {
    const { sql } = db;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    let fromTimer: Promise<unknown> | undefined;
    const transaction = sql.begin(async (tx) => {
      await tx`select 1`;
      entered();
      await gate;
      // Runs after the callback has settled: queued behind the commit, not a mistake.
      setTimeout(() => {
        fromTimer = sql`select 'later' as v`;
        fromTimer.catch(() => {});
      }, 10);
    });
    await inside;
    // Another request meanwhile: on one connection it waits for the transaction, then runs.
    const other = sql`select 'other' as v`;
    const otherDone = other.then((rows) => rows);
    release();
    await transaction;
    expect(await within(2000, otherDone)).toEqual([{ v: 'other' }]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await within(2000, fromTimer!)).toEqual([{ v: 'later' }]);
  });

  it('keeps what the pool offers: options, helpers, end', () => {
    const { sql } = db;
    expect(typeof sql.json).toBe('function');
    expect(typeof sql.end).toBe('function');
    expect(sql.options.max).toBe(1);
  });
});

/** A gate the test opens by hand: counts the waits, and holds each until `open()`. */
function handGate(): RequestGate & { waits: number; open(): void } {
  let release: () => void = () => {};
  let held = new Promise<void>((resolve) => (release = resolve));
  return {
    waits: 0,
    enter: () => () => {},
    waitForIdle() {
      this.waits += 1;
      return held;
    },
    open() {
      release();
      held = Promise.resolve();
    },
  };
}

describe('background work on the embedded database (protection 7)', () => {
  it('sends a background statement only once the gate lets it, while a request goes first', async () => {
    const { sql } = db;
    await sql`delete from guard_notes`;
    const gate = handGate();
    let stored = false;
    const background = asBackground(gate, () => sql`insert into guard_notes values (70, 'background')`.then(() => (stored = true)));
    // A request's statement sent after it is answered first: the background one has not gone.
    expect(await within(2000, sql`select count(*)::int as n from guard_notes where id = 70`)).toEqual([{ n: 0 }]);
    expect(stored).toBe(false);
    expect(gate.waits).toBe(1);
    gate.open();
    await within(2000, background);
    expect(await sql`select note from guard_notes where id = 70`).toEqual([{ note: 'background' }]);
  });

  it("waits once per background transaction, not for the transaction's own statements, and never for a request's", async () => {
    const { sql } = db;
    const gate = handGate();
    gate.open();
    const answer = await within(
      5000,
      asBackground(gate, () =>
        sql.begin(async (tx) => {
          await tx`insert into guard_notes values (71, 'one')`;
          await tx`update guard_notes set note = 'two' where id = 71`;
          // A refused pool query is refused at once, without a wait.
          await expect(sql`select 1`).rejects.toThrow(TransactionGuardError);
          return tx`select note from guard_notes where id = 71`;
        }),
      ),
    );
    expect(answer).toEqual([{ note: 'two' }]);
    expect(gate.waits).toBe(1);
    await asBackground(gate, () => Promise.all([sql`select 1`, sql.unsafe('select 2')]));
    expect(gate.waits).toBe(3);
    // Outside asBackground (a request's work) nothing waits.
    await sql`select 1`;
    await sql.begin((tx) => tx`select 1`);
    expect(gate.waits).toBe(3);
  });
});

describe('deadlines on the embedded database (one connection, no cancel request)', () => {
  /** Runs `run` in a deadline scope, sending its queries there. */
  const scoped = <T>(ms: number, run: () => Promise<T>) => withDeadline(ms, async () => await run());
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('answers a query that outlives its deadline with DatabaseDeadlineError; the connection serves the next one', async () => {
    const { sql } = db;
    const outcome = scoped(200, () => sql`select pg_sleep(0.6)`);
    await expect(within(2000, outcome)).rejects.toThrow(DatabaseDeadlineError);
    await expect(outcome).rejects.toThrow(/A query \(select pg_sleep\(0.6\)\) did not finish within its deadline \(200 ms\)/);
    expect(await sql`select 'next' as v`).toEqual([{ v: 'next' }]);
  });

  it('never sends as written a query that was still waiting for the connection when its deadline passed', async () => {
    const { sql } = db;
    // A query with parameters, new to the connection, is described first: postgres.js gives the
    // connection nothing else until it is done, so the insert waits in the pool's queue.
    const slow = scoped(0, () => sql`select pg_sleep(${0.6}) as holds_the_connection`);
    const late = scoped(150, () => sql`insert into guard_notes values (${100}, ${'too late'})`);
    await expect(within(2000, late)).rejects.toThrow(DatabaseDeadlineError);
    await slow;
    expect(await sql`select id from guard_notes where id = 100`).toEqual([]);
  });

  it('answers a transaction past its deadline at once, refuses its later queries and rolls it back, even when its callback succeeds', async () => {
    const { sql } = db;
    let refused: unknown;
    let finished!: () => void;
    const callbackDone = new Promise<void>((resolve) => (finished = resolve));
    const outcome = scoped(200, () =>
      sql.begin(async (tx) => {
        await tx`insert into guard_notes values (101, 'rolled back')`;
        await sleep(400);
        refused = await tx`insert into guard_notes values (102, 'refused')`.catch((error: unknown) => error);
        finished();
        return 'the callback succeeded';
      }),
    );
    await expect(within(2000, outcome)).rejects.toThrow(DatabaseDeadlineError);
    await callbackDone;
    expect(refused).toBeInstanceOf(DatabaseDeadlineError);
    // Waits for the connection, which the transaction gives back once rolled back.
    expect(await within(5000, sql`select id from guard_notes where id in (101, 102)`)).toEqual([]);
  });

  it("gives a transaction's queries what is left of its deadline, and commits one that finishes in time", async () => {
    const { sql } = db;
    const answer = await scoped(5000, () =>
      sql.begin(async (tx) => {
        await tx`insert into guard_notes values (103, 'in time')`;
        return 'committed';
      }),
    );
    expect(answer).toBe('committed');
    await expect(
      scoped(300, () =>
        sql.begin(async (tx) => {
          await sleep(150);
          await tx`select pg_sleep(0.5)`; // about 150 ms left: this query is what passes the deadline
        }),
      ),
    ).rejects.toThrow(DatabaseDeadlineError);
    expect(await sql`select note from guard_notes where id = 103`).toEqual([{ note: 'in time' }]);
  });
});

const externalUrl = process.env.TEST_DATABASE_URL;

describe.skipIf(!externalUrl)('on a real PostgreSQL server', () => {
  let guarded: Database;
  let unguarded: Database;
  const table = `guard_${process.pid}_${Date.now()}`;
  beforeAll(async () => {
    guarded = await openDatabase({ databaseUrl: externalUrl, dataDir: '/nonexistent' });
    unguarded = await openDatabase({ databaseUrl: externalUrl, dataDir: '/nonexistent', transactionGuard: false });
    await unguarded.sql`create table ${unguarded.sql(table)} (id int)`;
  });
  afterAll(async () => {
    if (unguarded) await unguarded.sql`drop table if exists ${unguarded.sql(table)}`;
    await guarded?.close();
    await unguarded?.close();
  });

  it('refuses the pool inside a transaction there too (it would take a second connection)', async () => {
    await expect(guarded.sql.begin(async () => guarded.sql`select 1`)).rejects.toThrow(TransactionGuardError);
    // Without the guard (production) the same mistake goes through on a second connection.
    const pids = await unguarded.sql.begin(async (tx) => {
      const [own] = await tx`select pg_backend_pid() as pid`;
      const [other] = await unguarded.sql`select pg_backend_pid() as pid`;
      return [own!.pid, other!.pid];
    });
    expect(pids[0]).not.toBe(pids[1]);
  });

  for (const which of ['guarded', 'unguarded'] as const) {
    it(`sends nothing more once the transaction's connection is lost (${which})`, async () => {
      const db = which === 'guarded' ? guarded : unguarded;
      let late: unknown;
      const outcome = db.sql.begin(async (tx) => {
        await tx`insert into ${tx(table)} values (1)`;
        const [{ pid }] = (await tx`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
        // Another session ends this one while a statement of it runs.
        const sleeping = tx`select pg_sleep(5)`.catch((error: unknown) => error);
        await new Promise((resolve) => setTimeout(resolve, 100));
        await unguarded.sql`select pg_terminate_backend(${pid})`;
        await sleeping;
        // What a callback that catches the failure and goes on would send: refused, not written
        // to the dead socket (which ended the process in postgres.js 3.4.9) nor to a new session.
        late = await tx`insert into ${tx(table)} values (2)`.catch((error: unknown) => error);
      });
      await expect(within(5000, outcome)).rejects.toThrow();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(late).toBeInstanceOf(TransactionLostError);
      expect(await db.sql`select id from ${db.sql(table)}`).toEqual([]);
    });
  }
});

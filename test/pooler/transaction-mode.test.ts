/**
 * The database client through a real PgBouncer in transaction mode (`make test-pooler`), where a
 * server connection is the client's for one transaction only: the timeouts hold inside each
 * transaction and never leak to the next client of that server connection, no prepared statement
 * goes missing between transactions, LISTEN (ours and the pool's `sql.listen`) hears what pooled
 * transactions notify, and a client that does not say it is behind a pooler is told which settings
 * to use (src/db/connection.ts, openServer; docs/deploying.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/connection.ts';
import { migrate } from '../../src/db/migrations.ts';
import { createTestDatabase, databaseEnvFor, databaseUrlOf } from '../support/database.ts';
import { poolerAvailable } from './support.ts';

describe.skipIf(!poolerAvailable)('the database client behind a transaction-mode pooler', () => {
  let db: Database;
  let custom: Database;
  let pooled: string;
  let direct: string;
  const dataDir = '/nonexistent';

  beforeAll(async () => {
    db = await createTestDatabase();
    pooled = databaseUrlOf(db)!;
    direct = databaseEnvFor(pooled).DATABASE_DIRECT_URL!;
    custom = await openDatabase({ databaseUrl: pooled, poolMode: 'transaction', directUrl: direct, dataDir, statementTimeoutMs: 1234, lockTimeoutMs: 0, idleInTransactionTimeoutMs: 5000 });
  });
  afterAll(async () => {
    await custom?.close();
    await db?.close();
  });

  const settings = `select current_setting('statement_timeout') as statement, current_setting('lock_timeout') as lock,
    current_setting('idle_in_transaction_session_timeout') as idle`;

  it('sets the timeouts in each transaction, and leaves none on the server connections', async () => {
    const inside = await Promise.all(Array.from({ length: 12 }, () => custom.sql.begin(async (tx) => (await tx.unsafe(settings))[0])));
    for (const row of inside) expect(row).toEqual({ statement: '1234ms', lock: '0', idle: '5s' });
    // The server's defaults (the test server sets no role floor) on whichever connection comes next.
    const outside = await Promise.all(Array.from({ length: 12 }, async () => (await db.sql.unsafe(settings))[0]));
    for (const row of outside) expect(row).toEqual({ statement: '0', lock: '0', idle: '0' });
    await expect(custom.sql.begin((tx) => tx`select pg_sleep(3)`)).rejects.toMatchObject({ code: '57014' });
  });

  it('loses no prepared statement between transactions, with two clients sharing the server connections', async () => {
    const run = (client: Database, n: number) => client.sql.begin(async (tx) => (await tx`select ${n}::int as n, ${`text ${n}`}::text as t`)[0]);
    const answers = await Promise.all(Array.from({ length: 120 }, (_, i) => run(i % 2 ? db : custom, i % 7)));
    expect(answers.map((row) => row!.n)).toEqual(Array.from({ length: 120 }, (_, i) => i % 7));
  });

  it('answers queries with and without parameters sent at once, more than the pool has connections', async () => {
    // Ten connections, eighty queries: postgres.js would pipeline the rest, and a query with
    // parameters (Parse, Describe, Flush first) behind another one never gets its answer through
    // PgBouncer 1.18 (connection.ts, openServer): it would end at its deadline instead.
    const answers = await Promise.all(Array.from({ length: 80 }, (_, i) => (i % 2 ? custom.sql`select ${i}::int as n` : custom.sql`select -1 as n, pg_sleep(0.005)`).then((rows) => rows[0]!.n as number)));
    expect(answers.filter((n) => n >= 0)).toEqual(Array.from({ length: 40 }, (_, i) => 2 * i + 1));
  });

  it("hears on LISTEN (its own and the pool's sql.listen) what pooled transactions notify", async () => {
    const heard: string[] = [];
    const stop = await custom.listen('pooler_test', (payload) => heard.push(`db ${payload}`));
    const listening = await custom.sql.listen('pooler_test', (payload) => heard.push(`sql ${payload}`));
    try {
      for (const n of [1, 2, 3]) await db.sql.begin((tx) => tx`select pg_notify('pooler_test', ${String(n)})`);
      for (let i = 0; i < 100 && heard.length < 6; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(heard.toSorted()).toEqual(['db 1', 'db 2', 'db 3', 'sql 1', 'sql 2', 'sql 3']);
    } finally {
      stop();
      await listening.unlisten();
    }
  });

  it('migrates on the direct address (nothing is pending: the template is migrated)', async () => {
    expect(await migrate(custom.sql)).toEqual([]);
  });

  it('tells a client left in session mode which settings to use when the pooler refuses its timeouts', async () => {
    const unaware = await openDatabase({ databaseUrl: pooled, dataDir });
    try {
      await expect(migrate(unaware.sql)).rejects.toThrow(
        /refused the startup parameter (statement_timeout|lock_timeout|idle_in_transaction_session_timeout).*DATABASE_POOL_MODE=transaction.*DATABASE_DIRECT_URL/,
      );
    } finally {
      await unaware.close();
    }
  });
});

// The pool of embedded test databases (test/support/database-pool.ts): a database handed back and
// taken again holds exactly what a fresh copy of the migrated template holds, with none of the
// previous file's session state, and one that cannot be trusted is closed instead of reused.
import { afterAll, describe, expect, it } from 'vitest';
import type { Database, Sql } from '../../src/db/connection.ts';
import { createTestDatabase, externalDatabaseUrl } from '../support/database.ts';
import { drainPool, pooledDatabaseOpens } from '../support/database-pool.ts';
import { addMembership, createUser } from '../support/users.ts';

const schemas = `n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_toast%' and n.nspname not like 'pg\\_temp%'`;

/** Every table's rows (sorted) and every sequence's state, of every non-system schema. */
async function dump(sql: Sql): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const tables = await sql.unsafe<{ name: string }[]>(
    `select format('%I.%I', n.nspname, c.relname) as name from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.relkind in ('r', 'p') and ${schemas} order by 1`,
  );
  for (const { name } of tables) {
    const rows = await sql.unsafe<{ row: string }[]>(`select t::text as row from ${name} t order by 1`);
    out[name] = rows.map((r) => r.row);
  }
  const sequences = await sql.unsafe<{ name: string }[]>(
    `select format('%I.%I', n.nspname, c.relname) as name from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.relkind = 'S' and ${schemas} order by 1`,
  );
  for (const { name } of sequences) {
    const [state] = await sql.unsafe<{ last_value: string; is_called: boolean }[]>(`select last_value::text, is_called from ${name}`);
    out[`sequence ${name}`] = state;
  }
  return out;
}

/** What a session carries besides data. */
async function sessionState(sql: Sql): Promise<Record<string, unknown>> {
  const [row] = await sql.unsafe(
    `select (select count(*)::int from pg_locks where locktype = 'advisory') as advisory_locks,
            (select array_agg(c order by c) from pg_listening_channels() c) as channels,
            (select count(*)::int from pg_prepared_statements where from_sql) as prepared,
            (select count(*)::int from pg_class where relpersistence = 't') as temp_tables,
            current_setting('application_name') as application_name,
            current_setting('statement_timeout') as statement_timeout,
            current_setting('session_replication_role') as replication_role`,
  );
  return row!;
}

describe.skipIf(externalDatabaseUrl)('the embedded test database pool', () => {
  let reference: Database | undefined;
  afterAll(async () => {
    await reference?.close();
    await drainPool();
  });

  it('hands a released database back holding exactly the template, with a clean session', async () => {
    reference = await createTestDatabase({ fresh: true });
    const expectedData = await dump(reference.sql);
    const expectedSession = await sessionState(reference.sql);

    const first = await createTestDatabase();
    const opensAfterFirst = pooledDatabaseOpens();
    expect(await dump(first.sql)).toEqual(expectedData);

    // Dirty it every way a test file can: the app's rows, the migrations' seeded rows deleted,
    // every sequence advanced, and session state on PGlite's single backend.
    const user = await createUser(first);
    await addMembership(first, user, 'owner');
    const seeded = Object.entries(expectedData).filter(([name, rows]) => !name.startsWith('sequence ') && (rows as unknown[]).length > 0);
    expect(seeded.length).toBeGreaterThan(0);
    await first.sql.begin(async (tx) => {
      await tx.unsafe('set local session_replication_role = replica');
      for (const [name] of seeded) await tx.unsafe(`delete from ${name}`);
    });
    const sequences = Object.keys(expectedData).filter((name) => name.startsWith('sequence '));
    for (const name of sequences) await first.sql.unsafe(`select nextval('${name.slice('sequence '.length)}')`);
    await first.sql`select set_config('application_name', 'dirty', false)`;
    await first.sql`select set_config('statement_timeout', '1234', false)`;
    await first.sql`select pg_advisory_lock(42)`;
    await first.listen('pool_test_channel', () => {});
    await first.sql.unsafe('create temp table scratch (id int)');
    await first.sql.unsafe('prepare leftover as select 1');
    expect(await dump(first.sql)).not.toEqual(expectedData);
    expect(await sessionState(first.sql)).not.toEqual(expectedSession);

    await first.close();
    const again = await createTestDatabase();
    // The same database came back: no new one was opened.
    expect(pooledDatabaseOpens()).toBe(opensAfterFirst);
    expect(await dump(again.sql)).toEqual(expectedData);
    expect(await sessionState(again.sql)).toEqual(expectedSession);

    // Its listeners hear again, though the reset stopped the session listening.
    const heard: string[] = [];
    await again.listen('pool_test_channel', (payload) => heard.push(payload));
    await again.sql`select pg_notify('pool_test_channel', 'after reset')`;
    await again.sql`select 1`;
    expect(heard).toEqual(['after reset']);
    await again.close();
  });

  it('opens another database while the pooled one is out, and keeps only one idle', async () => {
    const held = await createTestDatabase();
    const opens = pooledDatabaseOpens();
    const second = await createTestDatabase();
    expect(pooledDatabaseOpens()).toBe(opens + 1);
    await second.close();
    await held.close();
    const next = await createTestDatabase();
    expect(pooledDatabaseOpens()).toBe(opens + 1);
    await next.close();
  });

  it('closes a database whose schema changed instead of reusing it', async () => {
    const changed = await createTestDatabase();
    await changed.sql.unsafe('create table not_in_template (id int)');
    const opens = pooledDatabaseOpens();
    await changed.close();
    await expect(changed.sql`select 1`).rejects.toThrow();
    const next = await createTestDatabase();
    expect(pooledDatabaseOpens()).toBe(opens + 1);
    expect(await next.sql.unsafe(`select to_regclass('public.not_in_template') as t`)).toEqual([{ t: null }]);
    await next.close();
  });
});

/**
 * Every foreign key has an index whose leading columns are the key's columns (in any order).
 * Without one, deleting or updating a referenced row (a user, an organization, a team) scans the
 * whole referencing table under lock, and lookups by the key scan too. The check reads the
 * catalogue of the migrated database, so migrations added later are covered as well.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import type { Db } from '../../src/db/db.ts';
import { createTestDatabase } from '../support/database.ts';

let db: Database;
beforeAll(async () => {
  db = await createTestDatabase({ fresh: true });
});
afterAll(() => db?.close());

interface ForeignKey {
  name: string;
  table: string;
  columns: string[];
  references: string;
}

/** Foreign keys in the public schema with no valid index on the table whose first columns are exactly the key's. */
async function unindexedForeignKeys(sql: Db): Promise<ForeignKey[]> {
  return sql<ForeignKey[]>`
    select c.conname as name,
           c.conrelid::regclass::text as table,
           array(select a.attname::text from unnest(c.conkey) as k(attnum)
                 join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum order by a.attnum) as columns,
           c.confrelid::regclass::text as references
    from pg_constraint c
    join pg_namespace n on n.oid = c.connamespace
    where c.contype = 'f'
      and n.nspname = 'public'
      and not exists (
        select 1 from pg_index i
        where i.indrelid = c.conrelid
          and i.indisvalid
          and i.indpred is null
          and i.indnkeyatts >= cardinality(c.conkey)
          -- the index's first n key columns are the key's n columns, in any order (0 marks an expression)
          and (select array_agg(x order by x) from unnest((i.indkey::int2[])[0:cardinality(c.conkey) - 1]) as x)
              = (select array_agg(x order by x) from unnest(c.conkey) as x)
      )
    order by 2, 1`;
}

describe('foreign key indexes', () => {
  it('every foreign key has an index led by its columns', async () => {
    const missing = await unindexedForeignKeys(db.sql);
    const described = missing.map((key) => `${key.table}(${key.columns.join(', ')}) -> ${key.references} [${key.name}]`);
    expect(described, `foreign keys without an index:\n${described.join('\n')}`).toEqual([]);
  });

  it('the check finds a foreign key without an index, and accepts one led by it', async () => {
    await db.sql
      .begin(async (tx) => {
        await tx`create table fk_probe_parent (a int, b int, primary key (a, b))`;
        await tx`create table fk_probe_child (id int primary key, a int, b int, other int, foreign key (b, a) references fk_probe_parent (b, a))`;
        const probe = async () => (await unindexedForeignKeys(tx)).filter((key) => key.table.startsWith('fk_probe_'));
        expect(await probe()).toEqual([{ name: 'fk_probe_child_b_a_fkey', table: 'fk_probe_child', columns: ['a', 'b'], references: 'fk_probe_parent' }]);
        // An index with the key's columns only after another one does not count; a partial one neither.
        await tx`create index on fk_probe_child (other, a, b)`;
        await tx`create index on fk_probe_child (a, b) where other > 0`;
        expect(await probe()).toHaveLength(1);
        // Led by them, in another order and with a further column: it counts.
        await tx`create index on fk_probe_child (b, a, other)`;
        expect(await probe()).toEqual([]);
        throw new RollBack();
      })
      .catch((error: unknown) => {
        if (!(error instanceof RollBack)) throw error;
      });
    expect(await db.sql`select to_regclass('fk_probe_child') as t`).toEqual([{ t: null }]);
  });
});

class RollBack extends Error {}

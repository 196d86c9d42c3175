import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { defaultMigrationsDir, migrate, migrationStatus, readMigrationFiles } from '../../src/db/migrations.ts';
import { createTestDatabase } from '../support/database.ts';

// Each test runs its own migrations in its own schema (search_path on the one
// embedded connection), so schema_migrations starts empty every time. That needs
// the single connection, so the embedded database even with TEST_DATABASE_URL;
// the real server's separate sessions are tested at the end of this file.
let db: Database;
let sql: postgres.Sql;
const tempDirs: string[] = [];
let schemaCount = 0;

beforeAll(async () => {
  db = await createTestDatabase({ embedded: true, fresh: true });
  sql = db.sql;
});
afterAll(async () => {
  await db?.close();
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});
beforeEach(async () => {
  const schema = `migrations_test_${++schemaCount}`;
  await sql.unsafe(`create schema ${schema}; set search_path to ${schema}`);
});

async function sqlDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'migrations-test-'));
  tempDirs.push(dir);
  await writeSqlFiles(dir, files);
  return dir;
}

async function writeSqlFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [name, contents] of Object.entries(files)) await writeFile(join(dir, name), contents);
}

// Each migration appends its name to `log`, so tests can see what ran and in which order.
const logged = (name: string) => `insert into log (migration) values ('${name}');`;
const threeMigrations = {
  '0010_third.sql': logged('0010'),
  '0001_create_log.sql': `create table log (seq serial primary key, migration text not null);\n${logged('0001')}`,
  '0002_second.sql': `create table second (id int); ${logged('0002')}`,
};

async function log(target: postgres.Sql = sql): Promise<string[]> {
  const rows = await target<{ migration: string }[]>`select migration from log order by seq`;
  return rows.map((row) => row.migration);
}

describe('migrate', () => {
  it('applies files in number order, each exactly once, recording checksums', async () => {
    const dir = await sqlDir(threeMigrations);
    expect(await migrate(sql, { dir })).toEqual(['0001_create_log', '0002_second', '0010_third']);
    expect(await migrate(sql, { dir })).toEqual([]);
    expect(await log()).toEqual(['0001', '0002', '0010']);

    const rows = await sql`select version, name, checksum, applied_at from schema_migrations order by version`;
    expect(rows.map((row) => [row.version, row.name])).toEqual([
      ['0001', 'create_log'],
      ['0002', 'second'],
      ['0010', 'third'],
    ]);
    expect(rows[0]!.checksum).toBe(createHash('sha256').update(threeMigrations['0001_create_log.sql']).digest('hex'));
    expect(rows[0]!.applied_at).toBeInstanceOf(Date);
  });

  it('applies only the new files on a later run', async () => {
    const dir = await sqlDir({ '0001_create_log.sql': threeMigrations['0001_create_log.sql'] });
    expect(await migrate(sql, { dir })).toEqual(['0001_create_log']);
    await writeSqlFiles(dir, { '0002_more.sql': logged('0002') });
    expect(await migrate(sql, { dir })).toEqual(['0002_more']);
    expect(await log()).toEqual(['0001', '0002']);
  });

  it('stops, applying nothing, when an applied file was changed', async () => {
    const dir = await sqlDir({ '0001_create_log.sql': threeMigrations['0001_create_log.sql'] });
    await migrate(sql, { dir });
    await writeSqlFiles(dir, {
      '0001_create_log.sql': `${threeMigrations['0001_create_log.sql']}\n-- edited`,
      '0002_more.sql': logged('0002'),
    });
    const failure = migrate(sql, { dir });
    await expect(failure).rejects.toThrow(/0001_create_log\.sql/);
    await expect(failure).rejects.toThrow(/applied checksum .* differs/);
    await expect(failure).rejects.toThrow(/forward-only.*add a new migration instead/);
    expect(await log()).toEqual(['0001']);
  });

  it('rolls back only the failing migration and stops there', async () => {
    const dir = await sqlDir({
      '0001_create_log.sql': threeMigrations['0001_create_log.sql'],
      '0002_broken.sql': `create table half_done (id int); ${logged('0002')} select 1 / 0;`,
      '0003_after.sql': logged('0003'),
    });
    await expect(migrate(sql, { dir })).rejects.toThrow(/Migration 0002_broken\.sql failed.*division by zero/);
    expect(await log()).toEqual(['0001']);
    const [table] = await sql`select to_regclass('half_done') as name`;
    expect(table!.name).toBeNull();
    expect((await migrationStatus(sql, dir)).pending).toEqual(['0002_broken', '0003_after']);

    // A failed migration was never applied, so fixing the file is allowed.
    await writeSqlFiles(dir, { '0002_broken.sql': `create table half_done (id int); ${logged('0002')}` });
    expect(await migrate(sql, { dir })).toEqual(['0002_broken', '0003_after']);
  });

  it('lets concurrent runners apply each migration once', async () => {
    const dir = await sqlDir(threeMigrations);
    const results = await Promise.all([migrate(sql, { dir }), migrate(sql, { dir }), migrate(sql, { dir })]);
    expect(results.flat().sort()).toEqual(['0001_create_log', '0002_second', '0010_third']);
    expect(await log()).toEqual(['0001', '0002', '0010']);
  });

  it('refuses a file numbered below an already applied one', async () => {
    const dir = await sqlDir({ '0001_create_log.sql': threeMigrations['0001_create_log.sql'], '0005_later.sql': logged('0005') });
    await migrate(sql, { dir });
    await writeSqlFiles(dir, { '0003_late_arrival.sql': logged('0003') });
    await expect(migrate(sql, { dir })).rejects.toThrow(/0003_late_arrival\.sql is not applied, but the later 0005_later/);
  });

  it('rejects misnamed and duplicate-numbered files', async () => {
    await expect(readMigrationFiles(await sqlDir({ '1_short.sql': '' }))).rejects.toThrow(/1_short\.sql .* not named NNNN_name\.sql/);
    await expect(readMigrationFiles(await sqlDir({ '0001_a.sql': '', '0001_b.sql': '' }))).rejects.toThrow(/share the number 0001/);
    expect(await readMigrationFiles(await sqlDir({ 'README.md': '# notes', '0001_a.sql': '' }))).toHaveLength(1);
  });
});

describe('migrationStatus', () => {
  it('reports shipped, applied, pending, unknown and latest', async () => {
    const dir = await sqlDir(threeMigrations);
    expect(await migrationStatus(sql, dir)).toEqual({
      shipped: 3,
      applied: 0,
      pending: ['0001_create_log', '0002_second', '0010_third'],
      unknown: 0,
      latestApplied: null,
    });

    await migrate(sql, { dir: await sqlDir({ '0001_create_log.sql': threeMigrations['0001_create_log.sql'] }) });
    await sql`insert into schema_migrations (version, name, checksum) values ('0099', 'from_a_newer_release', 'x')`;
    expect(await migrationStatus(sql, dir)).toEqual({
      shipped: 3,
      applied: 2,
      pending: ['0002_second', '0010_third'],
      unknown: 1,
      latestApplied: '0099_from_a_newer_release',
    });
  });

  it('finds the shipped sql/ directory fully applied in the test template', async () => {
    await sql`set search_path to public`;
    const status = await migrationStatus(sql);
    expect(status.shipped).toBeGreaterThan(0);
    expect(status).toMatchObject({ applied: status.shipped, pending: [], unknown: 0 });
    expect((await readMigrationFiles(defaultMigrationsDir))[0]!.fileName).toBe('0001_extensions.sql');
  });
});

// Real concurrency (separate sessions, the advisory lock actually contended)
// needs a real server: PGlite has a single backend. Set TEST_DATABASE_URL to a
// disposable PostgreSQL to run this; it works in a schema of its own.
const externalUrl = process.env.TEST_DATABASE_URL;
describe.skipIf(!externalUrl)('migrate against a real PostgreSQL server', () => {
  it('serialises runners in separate sessions so each migration applies once', async () => {
    const schema = `migrations_test_${process.pid}_${Date.now()}`;
    const admin = postgres(externalUrl!, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create schema ${schema}`);
    const clients = [1, 2, 3].map(() => postgres(externalUrl!, { max: 2, onnotice: () => {}, connection: { search_path: schema } }));
    try {
      const slow = { ...threeMigrations, '0002_second.sql': `${threeMigrations['0002_second.sql']} select pg_sleep(0.5);` };
      const dir = await sqlDir(slow);
      const results = await Promise.all(clients.map((client) => migrate(client, { dir })));
      expect(results.flat().sort()).toEqual(['0001_create_log', '0002_second', '0010_third']);
      expect(await log(clients[0])).toEqual(['0001', '0002', '0010']);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
      await admin.unsafe(`drop schema ${schema} cascade`);
      await admin.end();
    }
  });
});

describe('migrate: files that run outside a transaction', () => {
  const table = "create table items (id int primary key, code text);\ninsert into items select n, 'c' || n from generate_series(1, 50) n;";

  it('builds an index CONCURRENTLY, statement by statement, and records the file', async () => {
    const dir = await sqlDir({
      '0001_items.sql': table,
      '0002_items_code.sql': '-- concurrently: outside a transaction\ncreate index concurrently if not exists items_code on items (code);\n',
    });
    expect(await migrate(sql, { dir })).toEqual(['0001_items', '0002_items_code']);
    const [index] = await sql`select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'items_code' and c.relnamespace = current_schema()::regnamespace`;
    expect(index).toEqual({ valid: true });
  });

  it('drops an invalid index left by a failed build and builds it again', async () => {
    const dir = await sqlDir({
      '0001_items.sql': `${table}\ninsert into items values (51, 'c1');`,
      '0002_unique_code.sql': 'create unique index concurrently if not exists items_code_key on items (code);\n',
    });
    await expect(migrate(sql, { dir })).rejects.toThrow(/0002_unique_code\.sql failed.*could not create unique index/);
    const invalid = () => sql`select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'items_code_key' and c.relnamespace = current_schema()::regnamespace`;
    expect(await invalid()).toEqual([{ valid: false }]);

    await sql`delete from items where id = 51`;
    expect(await migrate(sql, { dir })).toEqual(['0002_unique_code']);
    expect(await invalid()).toEqual([{ valid: true }]);
  });

  it.each([
    [
      'mixes it with other statements',
      'create index concurrently if not exists a on t (x);\ncreate table u (id int);',
      /mixes a statement that cannot run in a transaction \(line 1\) with others \(line 2\)/,
    ],
    ['builds without IF NOT EXISTS', 'create index concurrently a on t (x);', /line 1: .*must say CREATE INDEX CONCURRENTLY IF NOT EXISTS/],
    ['drops without IF EXISTS', '\n\ndrop index concurrently a;', /line 3: .*must say DROP INDEX CONCURRENTLY IF EXISTS/],
  ])('refuses a file that %s, running none of it', async (_what, contents, message) => {
    const dir = await sqlDir({ '0001_bad.sql': contents });
    await expect(migrate(sql, { dir })).rejects.toThrow(message);
    expect((await migrationStatus(sql, dir)).applied).toBe(0);
  });
});

describe.skipIf(!externalUrl)('migrate against a real PostgreSQL server: locks', () => {
  // Each test in a schema of its own, with a table `items`, reached by clients whose search_path names it.
  let admin: postgres.Sql;
  let schema = '';
  const client = () => postgres(externalUrl!, { max: 2, onnotice: () => {}, connection: { search_path: schema } });
  const fast = { firstTimeoutMs: 50, maxTimeoutMs: 200, pauseMs: 50, maxPauseMs: 200 };

  beforeAll(() => {
    admin = postgres(externalUrl!, { max: 1, onnotice: () => {} });
  });
  beforeEach(async () => {
    schema = `migrations_locks_${process.pid}_${++schemaCount}`;
    await admin.unsafe(`create schema ${schema}; create table ${schema}.items (id int primary key, code text)`);
  });
  afterAll(async () => {
    await admin?.unsafe(`select string_agg(format('drop schema %I cascade', nspname), '; ') as drops from pg_namespace where nspname like 'migrations_locks_${process.pid}_%'`).then(async ([row]) => {
      if (row?.drops) await admin.unsafe(row.drops as string);
    });
    await admin?.end();
  });

  it('gives up its lock while a long transaction holds the table, so reads never queue behind it, and applies once it ends', async () => {
    const holder = client();
    const reader = client();
    const runner = client();
    try {
      // A long transaction that read the table: ALTER TABLE must wait for it.
      const held = holder.begin(async (tx) => {
        await tx`select count(*) from items`;
        await new Promise((resolve) => setTimeout(resolve, 1_500));
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const dir = await sqlDir({ '0001_add_column.sql': 'alter table items add column note text;' });
      const waits: unknown[] = [];
      const migrating = migrate(runner, { dir, lockRetry: { ...fast, attempts: 100 }, logger: { info: () => {}, warn: (wait) => waits.push(wait) } });
      // Meanwhile reads of the table answer at once: nothing waits in the lock queue for longer than a try's lock_timeout.
      const slowest = await readsDuring(reader, 1_200);
      expect(slowest).toBeLessThan(600);
      await held;
      expect(await migrating).toEqual(['0001_add_column']);
      expect(waits.length).toBeGreaterThan(0);
      expect(JSON.stringify(waits)).toMatch(/select count\(\*\) from items/);
    } finally {
      await Promise.all([holder.end(), reader.end(), runner.end()]);
    }
  });

  it('fails after its tries, naming the transaction that held the lock, and leaves nothing applied', async () => {
    const holder = client();
    const runner = client();
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    try {
      const held = holder.begin(async (tx) => {
        await tx`select pg_sleep(0), count(*) from items -- the long one`;
        await released;
      });
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      const dir = await sqlDir({ '0001_add_other.sql': 'alter table items add column other text;' });
      await expect(migrate(runner, { dir, lockRetry: { ...fast, attempts: 3 } })).rejects.toThrow(/0001_add_other\.sql failed.*in 3 tries.*the long one/s);
      release();
      await held;
      expect((await migrationStatus(runner, dir)).applied).toBe(0);
    } finally {
      release();
      await Promise.all([holder.end(), runner.end()]);
    }
  });

  it('lets runners in separate sessions wait for one that builds an index CONCURRENTLY, without a deadlock', async () => {
    const clients = [client(), client(), client()];
    try {
      await admin.unsafe(`insert into ${schema}.items (id, code) select n, 'c' || n from generate_series(1, 20000) n`);
      const dir = await sqlDir({
        '0001_first.sql': 'create table later (id int);',
        '0002_code_index.sql': 'create index concurrently if not exists items_code on items (code);',
        '0003_then.sql': 'alter table later add column x int;',
      });
      const results = await Promise.all(clients.map((each) => migrate(each, { dir })));
      expect(results.flat().sort()).toEqual(['0001_first', '0002_code_index', '0003_then']);
    } finally {
      await Promise.all(clients.map((each) => each.end()));
    }
  });
});

/** The slowest of back-to-back reads of `items` over `ms`. */
async function readsDuring(reader: postgres.Sql, ms: number): Promise<number> {
  let slowest = 0;
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const started = performance.now();
    await reader`select count(*) from items`;
    slowest = Math.max(slowest, performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return slowest;
}

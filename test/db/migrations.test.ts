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

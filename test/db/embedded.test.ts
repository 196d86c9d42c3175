import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { embeddedClientOptions, openDatabase, type Database } from '../../src/db/connection.ts';
import { startEmbeddedDatabase } from '../../src/db/embedded.ts';
import { createTestDatabase } from '../support/database.ts';
import { copyDataDir } from '../support/data-dir.ts';

/**
 * A copy of the migrated template's directory at `dataDir`: cheaper to start than unpacking a
 * tarball (loadDataDir, about 0.4 s of CPU more), which the dump test's copy does, as its subject.
 */
async function templateCopy(dataDir: string): Promise<string> {
  await mkdir(dataDir, { recursive: true });
  await copyDataDir(inject('templateDir'), dataDir);
  return dataDir;
}

describe('embedded database', () => {
  let db: Database;
  beforeAll(async () => {
    db = await createTestDatabase({ embedded: true, fresh: true });
  });
  afterAll(() => db?.close());

  it('is an embedded PostgreSQL 18 reached over one connection', async () => {
    expect(db.kind).toBe('embedded');
    expect(db.sql.options.max).toBe(1);
    await db.ping();
    const [row] = await db.sql`select current_setting('server_version_num')::int as version`;
    expect(row!.version).toBeGreaterThanOrEqual(180000);
  });

  it('runs pgvector: cosine distance ordering and an HNSW index', async () => {
    const { sql } = db;
    await sql`create table items (id int primary key, embedding vector(3) not null)`;
    await sql`create index on items using hnsw (embedding vector_cosine_ops)`;
    await sql`
      insert into items (id, embedding) values
        (1, '[1, 0, 0]'), (2, '[0, 1, 0]'), (3, '[0.9, 0.1, 0]'), (4, '[-1, 0, 0]')`;
    const query = '[1, 0, 0]';
    const rows = await sql`
      select id, embedding <=> ${query}::vector as distance
      from items order by embedding <=> ${query}::vector limit 3`;
    expect(rows.map((row) => row.id)).toEqual([1, 3, 2]);
    expect(rows[0]!.distance).toBeCloseTo(0);
    expect(rows[2]!.distance).toBeCloseTo(1);
  });

  it('has pgcrypto', async () => {
    const [row] = await db.sql`select encode(digest('abc', 'sha256'), 'hex') as hash`;
    expect(row!.hash).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('keeps column names as written (no case transform)', async () => {
    const [row] = await db.sql`select 1 as created_at_ms`;
    expect(Object.keys(row!)).toEqual(['created_at_ms']);
  });
});

describe('embedded database lifecycle', () => {
  let dataDir: string;
  beforeAll(async () => {
    // Beside the template (testScratchRoot), where copying it is cheapest.
    dataDir = await mkdtemp(join(inject('testScratchRoot'), 'embedded-lifecycle-'));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('persists data across restarts, refuses a second opener, closes idempotently', async () => {
    const first = await openDatabase({ dataDir: await templateCopy(dataDir) });
    await first.sql`create table kept (note text)`;
    await first.sql`insert into kept values ('survives a restart')`;

    // PGlite itself would let a second instance write the same files.
    await expect(openDatabase({ dataDir })).rejects.toThrow(/in use by process/);

    await Promise.all([first.close(), first.close()]);
    await first.close();
    await expect(first.sql`select 1`).rejects.toThrow();

    const logged: string[] = [];
    const second = await openDatabase({ dataDir, logger: { info: (_obj, msg) => logged.push(msg ?? '') } });
    try {
      expect(await second.sql`select note from kept`).toEqual([{ note: 'survives a restart' }]);
      expect(logged).toEqual(['embedded database started']);
    } finally {
      await second.close();
    }
  });

  it('dumps its data directory (from its thread) as a tarball another database starts from', async () => {
    const source = await startEmbeddedDatabase({ dataDir: await templateCopy(join(dataDir, 'source')) });
    let tarball: Blob;
    try {
      const sql = postgres(source.url, embeddedClientOptions);
      await sql`create table carried (note text)`;
      await sql`insert into carried values ('in the dump')`;
      await sql.end();
      tarball = await source.dumpDataDir();
      // It stopped serving: only close() may follow.
      const late = postgres(source.url, embeddedClientOptions);
      await expect(late`select 1`).rejects.toThrow(/ECONNREFUSED/);
      await late.end();
    } finally {
      await source.close();
    }
    expect(tarball.size).toBeGreaterThan(1_000_000);

    const copy = await openDatabase({ dataDir: join(dataDir, 'copy'), loadDataDir: tarball });
    try {
      expect(await copy.sql`select note from carried`).toEqual([{ note: 'in the dump' }]);
      const extensions = await copy.sql`select extname from pg_extension where extname in ('vector', 'pgcrypto') order by extname`;
      expect(extensions.map((row) => row.extname)).toEqual(['pgcrypto', 'vector']);
    } finally {
      await copy.close();
    }
  });
});

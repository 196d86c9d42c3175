// The migrated template a new embedded database starts from (src/composition/database-template.ts), and the
// recovery of a data directory whose creation was cut off (src/db/embedded.ts).
import { openAsBlob } from 'node:fs';
import { copyFile, cp, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../../src/db/connection.ts';
import { embeddedDatabaseExists, embeddedPgDataPath } from '../../src/db/embedded.ts';
import { defaultMigrationsDir, migrate, migrationStatus } from '../../src/db/migrations.ts';
import { ensureTemplate, templateBlob, templateKey, templatePath } from '../../src/composition/database-template.ts';

let scratch: string;
beforeEach(async () => {
  scratch = await mkdtemp(join(inject('testScratchRoot'), 'workspace-api-test-'));
});
afterEach(() => rm(scratch, { recursive: true, force: true }));

/** A copy of sql/ that a test may change. */
async function migrationsCopy(): Promise<string> {
  const dir = join(scratch, 'sql');
  await cp(fileURLToPath(defaultMigrationsDir), dir, { recursive: true });
  return dir;
}

describe('the template key', () => {
  it('is stable for the same migrations and changes with any edit or new migration', async () => {
    const dir = await migrationsCopy();
    const key = await templateKey(dir);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(await templateKey(dir)).toBe(key);
    expect(await templateKey(defaultMigrationsDir)).toBe(key);

    const [first] = (await readdir(dir)).filter((name) => name.endsWith('.sql')).sort();
    await writeFile(join(dir, first!), '-- one more comment\n', { flag: 'a' });
    const edited = await templateKey(dir);
    expect(edited).not.toBe(key);

    await writeFile(join(dir, '9999_later.sql'), 'select 1;\n');
    expect(await templateKey(dir)).not.toBe(edited);
    expect(templatePath(key, scratch)).toBe(join(scratch, `pg-template-${key.slice(0, 24)}.tar`));
  });
});

describe('ensureTemplate', () => {
  it('uses the cached tarball of the current key without building', async () => {
    const cacheDir = join(scratch, 'cache');
    await mkdir(cacheDir);
    const path = templatePath(await templateKey(), cacheDir);
    await copyFile(inject('templateDataDir'), path);
    expect(await ensureTemplate({ cacheDir })).toEqual({ path, built: false });
  });

  it('builds a migrated template when missing, replaces the stale one, and a new data directory starts from it', { timeout: 180_000 }, async () => {
    const cacheDir = join(scratch, 'cache');
    await mkdir(cacheDir);
    await writeFile(join(cacheDir, 'pg-template-stale.tar'), 'from older migrations');

    const { path, built } = await ensureTemplate({ cacheDir });
    expect(built).toBe(true);
    expect(await readdir(cacheDir)).toEqual([path.slice(cacheDir.length + 1)]);

    const dataDir = join(scratch, 'data');
    expect(await embeddedDatabaseExists(dataDir)).toBe(false);
    const db = await openDatabase({ dataDir, loadDataDir: await templateBlob({ cacheDir }) });
    try {
      expect(await migrate(db.sql)).toEqual([]); // nothing left to do
      expect(await migrationStatus(db.sql)).toMatchObject({ pending: [], unknown: 0 });
    } finally {
      await db.close();
    }
    expect(await embeddedDatabaseExists(dataDir)).toBe(true);
  });
});

describe('a data directory whose creation was cut off', () => {
  it('is created again on the next start instead of failing on every start', { timeout: 60_000 }, async () => {
    const dataDir = join(scratch, 'data');
    // What a start killed while unpacking leaves: some files, and the marker it wrote first.
    await mkdir(join(embeddedPgDataPath(dataDir), 'base'), { recursive: true });
    await writeFile(join(embeddedPgDataPath(dataDir), 'base', 'half-written'), 'x');
    await writeFile(`${embeddedPgDataPath(dataDir)}.creating`, '12345\n');
    expect(await embeddedDatabaseExists(dataDir)).toBe(false);

    const db = await openDatabase({ dataDir, loadDataDir: await openAsBlob(inject('templateDataDir')) });
    try {
      expect(await migrationStatus(db.sql)).toMatchObject({ pending: [] });
    } finally {
      await db.close();
    }
    expect(await readdir(dataDir)).not.toContain('pg.creating');
    expect(await embeddedDatabaseExists(dataDir)).toBe(true);
  });
});

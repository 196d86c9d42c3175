/**
 * Applied migrations are frozen. A deployment records each migration's sha256 in
 * schema_migrations and refuses to start when a file it applied has changed (src/db/migrations.ts),
 * but every test builds a fresh database, so an edited migration passes them all and only real
 * deployments break. sql/checksums.txt (the `sha256sum` format, so `cd sql && sha256sum -c
 * checksums.txt` checks it too) lists the checksum of every migration file, computed as the
 * migration runner computes it; this test fails when one changes, or when a file is not listed.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultMigrationsDir, readMigrationFiles } from '../../src/db/migrations.ts';

const LIST = new URL('../../sql/checksums.txt', import.meta.url);

/** `<sha256>  <file name>` per line, as `sha256sum` writes them. */
function parseChecksums(text: string): Map<string, string> {
  const listed = new Map<string, string>();
  for (const [index, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const match = /^([0-9a-f]{64}) [ *](\S+)$/.exec(line);
    if (!match) throw new Error(`sql/checksums.txt line ${index + 1} is not "<sha256>  <file name>": ${JSON.stringify(line)}`);
    listed.set(match[2]!, match[1]!);
  }
  return listed;
}

const HOW_TO_ADD = 'A new migration is listed with `cd sql && sha256sum NNNN_name.sql >> checksums.txt`, committed with it.';

describe('applied migrations are frozen (sql/checksums.txt)', async () => {
  const listed = parseChecksums(readFileSync(LIST, 'utf8'));
  const files = await readMigrationFiles(defaultMigrationsDir);

  it('the list parses, and is in file order (append-only: a new migration is a new last line)', () => {
    expect(listed.size).toBeGreaterThan(0);
    const names = [...listed.keys()];
    expect(names).toEqual([...names].sort());
  });

  it('no listed migration has changed since it was listed', () => {
    const changed = files.filter((file) => listed.has(file.fileName) && listed.get(file.fileName) !== file.checksum).map((file) => file.fileName);
    expect(
      changed,
      `Migrations are forward-only: ${changed.join(', ')} changed after being applied, and every deployment that applied ` +
        'it will refuse to start. Restore the file (git checkout -- sql/<file>) and put the change in a new migration.',
    ).toEqual([]);
  });

  it('no listed migration is missing', () => {
    const present = new Set(files.map((file) => file.fileName));
    expect(
      [...listed.keys()].filter((name) => !present.has(name)),
      'a migration once applied can never be removed or renamed',
    ).toEqual([]);
  });

  it('every migration file is listed', () => {
    const unlisted = files.filter((file) => !listed.has(file.fileName)).map((file) => file.fileName);
    expect(unlisted, `${unlisted.join(', ')} not in sql/checksums.txt. ${HOW_TO_ADD}`).toEqual([]);
  });

  it('catches a one-byte edit of a listed file, as the runner would (the same readMigrationFiles checksum)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'frozen-migrations-'));
    try {
      const first = files[0]!;
      await writeFile(join(dir, first.fileName), `${first.contents} `);
      const [edited] = await readMigrationFiles(dir);
      expect(edited!.fileName).toBe(first.fileName);
      expect(edited!.checksum).not.toBe(listed.get(first.fileName));
      expect(first.checksum).toBe(listed.get(first.fileName));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

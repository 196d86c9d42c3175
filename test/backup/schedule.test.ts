// Scheduled backups (src/backup/schedule.ts): the names they get, what pruning deletes, and one
// scheduled run with takeBackup replaced by a fake that writes a directory (the real one is
// test/backup/backup-restore.test.ts's).
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BackupManifest } from '../../src/backup/manifest.ts';
import { backupName, backupsToDelete, scheduledBackup } from '../../src/backup/schedule.ts';
import type { Database } from '../../src/db/connection.ts';
import { createLogger } from '../../src/logger.ts';

describe('backupName', () => {
  it.each([
    { given: '2026-12-06T18:30:00.123Z', want: '2026-12-06T18-30-00Z' },
    { given: '2027-01-01T00:00:59.999Z', want: '2027-01-01T00-00-59Z' },
  ])('$given → $want', ({ given, want }) => {
    expect(backupName(new Date(given))).toBe(want);
  });
});

describe('backupsToDelete', () => {
  const a = '2026-12-06T10-00-00Z';
  const b = '2026-12-06T11-00-00Z';
  const c = '2026-12-06T12-00-00Z';
  it.each([
    { given: { names: [c, a, b], keep: 2 }, want: [a] },
    { given: { names: [a, b, c], keep: 3 }, want: [] },
    { given: { names: [a, b, c], keep: 0 }, want: [a, b] }, // always keeps the newest
    { given: { names: [a, `.${b}.partial-x1y2z3`, 'mine', '.partial-other', c], keep: 1 }, want: [a, `.${b}.partial-x1y2z3`] },
    { given: { names: ['2026-12-06', 'notes.txt'], keep: 1 }, want: [] },
  ])('$given.names keeping $given.keep → $want', ({ given, want }) => {
    expect(backupsToDelete(given.names, given.keep)).toEqual(want);
  });
});

describe('scheduledBackup', () => {
  let dataDir: string | undefined;
  afterEach(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('takes one into DATA_DIR/backups/<time>, then keeps the newest `keep`; a failed one is logged and pruning still runs', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'backup-schedule-'));
    const backups = join(dataDir, 'backups');
    await mkdir(join(backups, '2026-12-06T09-00-00Z'), { recursive: true });
    await mkdir(join(backups, '.2026-12-06T09-30-00Z.partial-abc'));
    await writeFile(join(backups, 'README'), 'kept');
    const destinations: string[] = [];
    const take = async (options: { destination: string }) => {
      destinations.push(options.destination);
      await mkdir(options.destination);
      return {} as BackupManifest;
    };
    const options = { dataDir, db: { kind: 'embedded' } as Database, localUploads: true, logger: createLogger('silent'), schedule: { intervalMinutes: 60, keep: 2 }, take };

    await scheduledBackup({ ...options, now: () => new Date('2026-12-06T10:00:00Z') });
    await scheduledBackup({ ...options, now: () => new Date('2026-12-06T11:00:00Z') });
    expect(destinations).toEqual([join(backups, '2026-12-06T10-00-00Z'), join(backups, '2026-12-06T11-00-00Z')]);
    expect((await readdir(backups)).sort()).toEqual(['2026-12-06T10-00-00Z', '2026-12-06T11-00-00Z', 'README']);

    const failing = async () => {
      throw new Error('disk full');
    };
    await scheduledBackup({ ...options, schedule: { intervalMinutes: 60, keep: 1 }, take: failing, now: () => new Date('2026-12-06T12:00:00Z') });
    expect((await readdir(backups)).sort()).toEqual(['2026-12-06T11-00-00Z', 'README']);
  });
});

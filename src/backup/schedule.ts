/**
 * Backups on a schedule, by the running service (BACKUP_INTERVAL_MINUTES, BACKUP_KEEP): every
 * interval one into DATA_DIR/backups/<time taken>, then all but the newest `keep` are deleted.
 * They sit on the data's own disk: they undo a mistake (a deletion, a bad migration), not the
 * loss of the disk; copy them elsewhere for that (docs/backups.md).
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.ts';
import { takeBackup, type TakeBackupOptions } from './take-backup.ts';

export interface BackupSchedule {
  intervalMinutes: number;
  /** How many finished scheduled backups to keep (at least 1). */
  keep: number;
}

export interface ScheduleOptions extends Omit<TakeBackupOptions, 'destination'> {
  schedule: BackupSchedule;
  now?: () => Date;
  /** takeBackup; tests pass another. */
  take?: typeof takeBackup;
}

export function backupsDirectory(dataDir: string): string {
  return join(dataDir, 'backups');
}

/** Starts taking backups every interval (the first one interval after the start). */
export function scheduleBackups(options: ScheduleOptions): { stop(): void } {
  const timer = setInterval(() => void scheduledBackup(options), options.schedule.intervalMinutes * 60_000);
  timer.unref(); // the process stops when its work does, not when the next backup is due
  return { stop: () => clearInterval(timer) };
}

/** One scheduled backup and the pruning after it. Never throws: a failure is logged, and the next interval tries again. */
export async function scheduledBackup(options: ScheduleOptions): Promise<void> {
  const dir = backupsDirectory(options.dataDir);
  const name = backupName((options.now ?? (() => new Date()))());
  const take = options.take ?? takeBackup;
  try {
    await take({ dataDir: options.dataDir, db: options.db, localUploads: options.localUploads, logger: options.logger, destination: join(dir, name) });
  } catch (error) {
    options.logger.warn({ err: error, destination: join(dir, name) }, 'scheduled backup failed');
  }
  await prune(dir, options.schedule.keep, options.logger);
}

/** `2026-12-06T18-30-00Z`: the time in UTC, in a name every file system takes, sorting in time order. */
export function backupName(at: Date): string {
  return `${at.toISOString().slice(0, 19).replaceAll(':', '-')}Z`;
}

const SCHEDULED = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z$/;

/**
 * What pruning deletes from the backups directory: the scheduled backups but the newest `keep`,
 * and what a scheduled backup cut off left (`.<name>.partial-…`; none runs while pruning, one at a
 * time per process). Anything else there is someone's, and stays.
 */
export function backupsToDelete(names: string[], keep: number): string[] {
  const scheduled = names.filter((name) => SCHEDULED.test(name)).sort();
  const partial = names.filter((name) => name.startsWith('.') && name.includes('.partial-') && SCHEDULED.test(name.slice(1, name.indexOf('.partial-'))));
  return [...scheduled.slice(0, Math.max(0, scheduled.length - Math.max(1, keep))), ...partial];
}

async function prune(dir: string, keep: number, logger: Logger): Promise<void> {
  try {
    const deleted = backupsToDelete(await readdir(dir), keep);
    for (const name of deleted) await rm(join(dir, name), { recursive: true, force: true });
    if (deleted.length > 0) logger.info({ dir, deleted }, 'old scheduled backups deleted');
  } catch (error) {
    logger.warn({ err: error, dir }, 'deleting old scheduled backups failed');
  }
}

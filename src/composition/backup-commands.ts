/**
 * `backup <path>` and `restore <path>` (main.ts), for the embedded defaults (docs/backups.md).
 * `backup` asks the service when one runs on DATA_DIR (it holds the database: data-dir-lock.ts),
 * through its control channel (backup/control-channel.ts), and otherwise opens the database itself.
 * With DATABASE_URL both refuse: PostgreSQL and S3 have their own backups.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { askForBackup } from '../backup/control-channel.ts';
import type { BackupManifest } from '../backup/manifest.ts';
import { RestoreRefusedError, restoreBackup } from '../backup/restore-backup.ts';
import { takeBackup } from '../backup/take-backup.ts';
import type { Config } from '../config.ts';
import { embeddedDatabaseExists, embeddedPgDataPath } from '../db/embedded.ts';
import type { Logger } from '../logger.ts';
import { openDatabaseFor } from './commands.ts';

export const DATABASE_URL_BACKUP_REFUSAL =
  'backup and restore copy the embedded database (no DATABASE_URL). With DATABASE_URL, use what PostgreSQL has: ' +
  'pg_dump (or pg_dumpall) for a logical copy, or base backups with WAL archiving for point-in-time recovery ' +
  "(pg_basebackup, pgBackRest, or your provider's PITR); and for documents in S3, the bucket's versioning (and replication). See docs/backups.md.";

export async function runBackup(config: Config, logger: Logger, path: string): Promise<void> {
  if (config.databaseUrl) refuse(`Refusing to back up: ${DATABASE_URL_BACKUP_REFUSAL}`);
  const destination = resolve(path);
  const holder = await lockHolder(config.dataDir);
  let manifest: BackupManifest;
  if (holder !== undefined) {
    const answer = await askForBackup(config.dataDir, destination).catch((error: unknown) =>
      refuse(
        `The embedded database in ${config.dataDir} is in use by process ${holder}, which does not answer backup requests (${(error as Error).message}). ` +
          'Only `serve` and `api` take backups while they run; wait for that process to end, or stop it and run backup again.',
      ),
    );
    if (!answer.ok) refuse(`The service (process ${holder}) could not take the backup: ${answer.error}`);
    manifest = answer.manifest;
  } else {
    if (!(await embeddedDatabaseExists(config.dataDir))) refuse(`There is no embedded database in ${config.dataDir} to back up (DATA_DIR).`);
    const db = await openDatabaseFor(config, logger, false);
    try {
      manifest = await takeBackup({ dataDir: config.dataDir, db, destination, localUploads: config.storage.driver === 'local', logger });
    } finally {
      await db.close();
    }
  }
  console.log(describeBackup(destination, manifest, holder));
}

export async function runRestore(config: Config, path: string): Promise<void> {
  if (config.databaseUrl) refuse(`Refusing to restore: ${DATABASE_URL_BACKUP_REFUSAL}`);
  const source = resolve(path);
  let manifest: BackupManifest;
  try {
    manifest = await restoreBackup({ source, dataDir: config.dataDir });
  } catch (error) {
    if (error instanceof RestoreRefusedError) refuse(error.message);
    throw error;
  }
  console.log(
    `Restored the backup taken at ${manifest.takenAt} (version ${manifest.serviceVersion}) into ${config.dataDir}. ` +
      `Start the service with DATA_DIR=${config.dataDir}; migrations newer than the backup run at its start.`,
  );
}

function describeBackup(destination: string, manifest: BackupManifest, holder: number | undefined): string {
  const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;
  const uploads = manifest.uploads
    ? `${manifest.uploads.files} upload files (${mb(manifest.uploads.bytes)}), for ${manifest.uploads.readyDocuments} ready documents` +
      (manifest.uploads.missingReady.length > 0 ? `; ${manifest.uploads.missingReady.length} ready documents were being deleted and have no file: ${manifest.uploads.missingReady.join(', ')}` : '')
    : "no uploads (documents are stored in S3: rely on the bucket's versioning)";
  return `Backup written to ${destination}${holder !== undefined ? ` by the running service (process ${holder})` : ''}: the database as of ${manifest.takenAt} (${mb(manifest.database.bytes)}), ${uploads}${manifest.secret ? ', and DATA_DIR/secret' : ''}.`;
}

/** The pid of the live process holding DATA_DIR's database, if any (data-dir-lock.ts writes it). */
async function lockHolder(dataDir: string): Promise<number | undefined> {
  const pid = Number.parseInt(await readFile(`${embeddedPgDataPath(dataDir)}.lock`, 'utf8').catch(() => ''), 10);
  if (!Number.isInteger(pid) || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

function refuse(message: string): never {
  console.error(message);
  process.exit(1);
}

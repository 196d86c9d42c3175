/**
 * What a backup of the embedded defaults holds, written last as `manifest.json` at its top: a
 * directory with the manifest is a finished backup (docs/backups.md). `restore` reads it first.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export const BACKUP_FORMAT = 'workspace-api-backup';
export const BACKUP_FORMAT_VERSION = 1;

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  formatVersion: typeof BACKUP_FORMAT_VERSION;
  /** The service's version that took it. */
  serviceVersion: string;
  /** When the database's copy was taken (ISO 8601). */
  takenAt: string;
  /** `pg/`: PostgreSQL's data directory, as PGlite keeps it under DATA_DIR (its major version: pg/PG_VERSION). */
  database: { files: number; bytes: number; lastMigration: string | null };
  /**
   * `uploads/`, when documents are stored as local files: every stored object present when the
   * database was copied. `missingReady` lists the ready documents whose file was already gone then
   * (deleted by a documents.delete in flight: it removes the files before the rows). With the s3
   * driver the bytes stay in the bucket and `uploads` is null.
   */
  uploads: { files: number; bytes: number; readyDocuments: number; missingReady: string[] } | null;
  /** Whether `secret` (DATA_DIR/secret, the key of signed links when SECRET is not set) is included. */
  secret: boolean;
}

export const MANIFEST_FILE = 'manifest.json';

/** The manifest of the backup at `path`; throws with the reason when it is not a finished backup of this format. */
export async function readManifest(path: string): Promise<BackupManifest> {
  let text: string;
  try {
    text = await readFile(join(path, MANIFEST_FILE), 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'ENOENT' || code === 'ENOTDIR'
        ? `${path} is not a backup: it has no ${MANIFEST_FILE} (a backup is a directory written by \`node src/main.ts backup\`; one cut off halfway has none).`
        : `Cannot read ${join(path, MANIFEST_FILE)}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const manifest = JSON.parse(text) as Partial<BackupManifest>;
  if (manifest.format !== BACKUP_FORMAT) throw new Error(`${path} is not a backup of this service (${MANIFEST_FILE} says format ${JSON.stringify(manifest.format)}).`);
  if (manifest.formatVersion !== BACKUP_FORMAT_VERSION) {
    throw new Error(`${path} is a backup in format version ${String(manifest.formatVersion)}; this release reads version ${BACKUP_FORMAT_VERSION}.`);
  }
  return manifest as BackupManifest;
}

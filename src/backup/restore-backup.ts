/**
 * Restoring a backup (take-backup.ts) into an empty DATA_DIR: the database, the uploads and the
 * secret go back where the service looks for them, and the next `serve` starts on them. Only into
 * an empty (or new) directory: restoring over a live data directory would mix two states, and over
 * one a process uses would corrupt both.
 */
import { copyFile, mkdir, readdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { lockDataDir } from '../db/data-dir-lock.ts';
import { embeddedPgDataPath } from '../db/embedded.ts';
import { copyTree, syncPath, syncTree } from './file-trees.ts';
import { readManifest, type BackupManifest } from './manifest.ts';

/** restore must not go ahead; the message says why and what to do. */
export class RestoreRefusedError extends Error {
  override name = 'RestoreRefusedError';
}

export async function restoreBackup(options: { source: string; dataDir: string }): Promise<BackupManifest> {
  const { source, dataDir } = options;
  const lockPath = `${embeddedPgDataPath(dataDir)}.lock`;
  const entries = await listDirectory(dataDir);
  if (entries.includes('pg.lock')) {
    // The lock's own check: a pid that still runs holds it; a lock left by a dead process does not count.
    let lock;
    try {
      lock = await lockDataDir(lockPath);
    } catch (error) {
      const holder = (await readFile(lockPath, 'utf8').catch(() => '')).trim();
      throw new RestoreRefusedError(
        `Refusing to restore into ${dataDir}: its embedded database is in use${holder ? ` by process ${holder}` : ''} (${lockPath}). ` +
          'Restore into a new or empty directory, and start the service on it once the old one is stopped.',
        { cause: error },
      );
    }
    await lock.release();
  }
  if (entries.length > 0) {
    const shown = entries.slice(0, 5).join(', ') + (entries.length > 5 ? ', ...' : '');
    throw new RestoreRefusedError(`Refusing to restore into ${dataDir}: it is not empty (${shown}). Restore into a new or empty directory, and point DATA_DIR at it.`);
  }
  const manifest = await readManifest(source);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const lock = await lockDataDir(lockPath);
  try {
    const now = await listDirectory(dataDir);
    if (now.some((name) => name !== 'pg.lock')) throw new RestoreRefusedError(`Refusing to restore into ${dataDir}: files appeared in it meanwhile (${now.join(', ')}).`);
    if (manifest.uploads) await copyTree(join(source, 'uploads'), join(dataDir, 'uploads'));
    if (manifest.secret) await copyFile(join(source, 'secret'), join(dataDir, 'secret'));
    // The database last, and whole at once: a restore cut off halfway leaves no `pg` a start would open.
    const pg = embeddedPgDataPath(dataDir);
    await copyTree(join(source, 'pg'), `${pg}.restoring`);
    await syncTree(dataDir);
    await rename(`${pg}.restoring`, pg);
    await syncPath(dataDir);
  } finally {
    await lock.release();
  }
  return manifest;
}

async function listDirectory(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') throw new RestoreRefusedError(`Refusing to restore into ${dir}: it is a file, not a directory.`);
    throw error;
  }
}

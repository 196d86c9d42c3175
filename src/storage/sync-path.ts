/**
 * fsync(2) of a file or a directory by its path. For a directory: the names created, renamed or
 * removed in it are on the disk. Used wherever a write must survive a power cut before it is
 * acknowledged (the embedded database's data directory, local uploads, backups).
 */
import { open } from 'node:fs/promises';

export async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

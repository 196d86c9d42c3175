/**
 * Deleting stored objects, the one protocol for every deletion that removes rows naming them
 * (documents.delete, workspaces.delete, an organization's deletion, housekeeping). An object the
 * storage itself refuses to delete is logged by key and does not stop the deletion: the rows go
 * regardless, and the log is what lets someone clean it up by hand (specification,
 * workspaces.delete). Pass the documents' keys; the driver removes their uploads not committed with
 * them (the S3 driver's `staging/` objects), and a surviving one is logged under its own key.
 */
import type { Logger } from '../logger.ts';
import type { StorageDriver } from './driver.ts';
import { refuseWhenStorageDown } from './unavailable.ts';

type Survivors = (failed: string[]) => void;

const logEach =
  (log: Logger, owner: Record<string, string>): Survivors =>
  (failed) => {
    for (const key of failed) log.warn({ key, ...owner }, 'stored object survived its deletion');
  };

/**
 * Best effort, for deletions that cascade in the database (a workspace, an organization) or run
 * unattended (housekeeping): storage being down is logged, never thrown, and every key counts as
 * failed.
 */
export async function deleteObjectsBestEffort(
  storage: StorageDriver,
  keys: string[],
  log: Logger,
  owner: Record<string, string>,
  survivors: Survivors = logEach(log, owner),
): Promise<{ deleted: number; failed: number }> {
  if (keys.length === 0) return { deleted: 0, failed: 0 };
  const { failed } = await storage.deleteMany(keys).catch((error: unknown) => {
    log.warn({ err: error, ...owner }, 'deleting stored objects failed');
    return { failed: keys };
  });
  survivors(failed);
  return { deleted: keys.length - failed.length, failed: failed.length };
}

/**
 * Deleting the stored objects of rows a procedure deletes (documents.delete, workspaces.delete),
 * in two passes, each surviving key logged once across both:
 * - `beforeRows`: while the storage cannot be reached this answers 503 and the caller deletes no
 *   row, so the client's retry finishes the job (never rows gone and objects that nothing records);
 * - `afterRows`, best effort: objects committed meanwhile (a complete racing the deletion).
 */
export function objectDeletion(storage: StorageDriver, log: Logger, owner: Record<string, string>) {
  const logged = new Set<string>();
  const once: Survivors = (failed) => {
    const fresh = failed.filter((key) => !logged.has(key));
    for (const key of fresh) logged.add(key);
    logEach(log, owner)(fresh);
  };
  return {
    async beforeRows(keys: string[]): Promise<void> {
      if (keys.length > 0) once((await storage.deleteMany(keys).catch(refuseWhenStorageDown(log))).failed);
    },
    async afterRows(keys: string[]): Promise<void> {
      await deleteObjectsBestEffort(storage, keys, log, owner, once);
    },
  };
}

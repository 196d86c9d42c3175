/**
 * The storage being down, as procedures meet it (StorageUnavailableError, driver.ts): 503
 * SERVICE_UNAVAILABLE with a generic message, the driver's detail only in the log, because trying
 * again later can succeed. Deletions remove the stored objects before the rows that name them, so
 * an outage leaves both in place for a retry instead of objects that nothing records.
 */
import { ApiError } from '../contract/errors.ts';
import type { Logger } from '../logger.ts';
import { StorageUnavailableError, type StorageDriver } from './driver.ts';

export const STORAGE_UNAVAILABLE = 'The file storage is unavailable, try again later.';

/** For a storage call's `catch` in a procedure: StorageUnavailableError becomes the 503 (logged); anything else goes on. */
export function refuseWhenStorageDown(log: Logger): (error: unknown) => never {
  return (error) => {
    if (!(error instanceof StorageUnavailableError)) throw error;
    log.warn({ detail: error.message }, 'storage unavailable');
    throw new ApiError('SERVICE_UNAVAILABLE', { message: STORAGE_UNAVAILABLE });
  };
}

/**
 * Deleting the stored objects of rows (documents.delete, workspaces.delete), in two passes:
 * - `beforeRows`: while the storage cannot be reached this answers 503 and the caller deletes no
 *   row, so the client's retry finishes the job (never rows gone and objects that nothing records);
 * - `afterRows`, best effort: objects committed meanwhile (a complete racing the deletion).
 * An object the storage itself refuses to delete is logged by key, once, and does not stop the
 * deletion (specification, workspaces.delete).
 */
export function objectDeletion(storage: StorageDriver, log: Logger, owner: Record<string, string>) {
  const logged = new Set<string>();
  const report = (failed: string[]) => {
    for (const key of failed) {
      if (logged.has(key)) continue;
      logged.add(key);
      log.warn({ key, ...owner }, 'stored object survived its deletion');
    }
  };
  return {
    async beforeRows(keys: string[]): Promise<void> {
      if (keys.length > 0) report((await storage.deleteMany(keys).catch(refuseWhenStorageDown(log))).failed);
    },
    async afterRows(keys: string[]): Promise<void> {
      if (keys.length === 0) return;
      const { failed } = await storage.deleteMany(keys).catch((error: unknown) => {
        log.warn({ err: error, ...owner }, 'deleting stored objects failed');
        return { failed: keys };
      });
      report(failed);
    },
  };
}

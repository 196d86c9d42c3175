/**
 * Best-effort removal of many stored objects, for deletions that cascade in the database
 * (a workspace, an organization): the rows go regardless, and every key that survives is logged
 * so it can be cleaned up by hand (specification, workspaces.delete). Pass the documents' keys;
 * the driver removes their uploads not committed with them (the S3 driver's `staging/` objects),
 * and a surviving one is logged under its own key.
 */
import type { Logger } from '../logger.ts';
import type { StorageDriver } from './driver.ts';

export async function deleteObjectsBestEffort(storage: StorageDriver, keys: string[], log: Logger, owner: Record<string, string>): Promise<{ deleted: number; failed: number }> {
  if (keys.length === 0) return { deleted: 0, failed: 0 };
  const { failed } = await storage.deleteMany(keys).catch((error: unknown) => {
    log.warn({ err: error, ...owner }, 'deleting stored objects failed');
    return { failed: keys };
  });
  for (const key of failed) log.warn({ key, ...owner }, 'stored object survived its deletion');
  return { deleted: keys.length - failed.length, failed: failed.length };
}

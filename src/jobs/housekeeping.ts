/**
 * Scheduled cleanup, run by one worker at a time on the queue's schedule:
 * - documents still `pending` an hour after their upload address expired are deleted, with any
 *   bytes that arrived (they would otherwise stay pending forever and count against the storage
 *   quota); the hour lets an upload that started just before the expiry finish and be completed;
 * - job events older than the retention window (events.ts) are pruned.
 */
import type { Sql } from '../db/connection.ts';
import type { Logger } from '../logger.ts';
import type { StorageDriver } from '../storage/driver.ts';
import { deleteAbandonedUploads } from '../documents/store.ts';
import { deleteObjectsBestEffort } from '../storage/delete-objects.ts';
import { pruneJobEvents } from './events.ts';

export const ABANDONED_UPLOAD_GRACE_MS = 60 * 60_000;

export async function runHousekeeping(deps: { sql: Sql; storage: StorageDriver; logger: Logger; now(): Date }): Promise<{ abandonedUploads: number; objectsFailed: number; eventsPruned: number }> {
  const now = deps.now();
  const keys = await deleteAbandonedUploads(deps.sql, now, ABANDONED_UPLOAD_GRACE_MS);
  const objects = await deleteObjectsBestEffort(deps.storage, keys, deps.logger, { task: 'housekeeping' });
  const eventsPruned = await pruneJobEvents(deps.sql, now);
  return { abandonedUploads: keys.length, objectsFailed: objects.failed, eventsPruned };
}

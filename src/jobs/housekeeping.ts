/**
 * Scheduled cleanup, run by one worker at a time on the queue's schedule:
 * - documents still `pending` an hour after their upload address expired are deleted, with any
 *   bytes that arrived (they would otherwise stay pending forever and count against the storage
 *   quota); the hour lets an upload that started just before the expiry finish and be completed;
 * - job events older than the retention window (events-store.ts) are pruned;
 * - documents indexed by another embedding model than the current one are queued for re-indexing
 *   (reindex.ts);
 * - workspace.index jobs a worker of the previous release failed without settling their documents
 *   are settled: the documents not done are refunded (lifecycle.ts settleStopped);
 * - on the embedded database, which has no autovacuum, the tables past autovacuum's thresholds
 *   are vacuumed and analysed (db/embedded-vacuum.ts); a failure there is logged and tried again
 *   next time, the rest of the housekeeping stands.
 */
import type { Sql } from '../db/connection.ts';
import { vacuumWhereNeeded, type TableMaintenance } from '../db/embedded-vacuum.ts';
import type { RequestGate } from '../db/request-gate.ts';
import type { Logger } from '../logger.ts';
import type { StorageDriver } from '../storage/driver.ts';
import { deleteAbandonedUploads } from '../documents/store.ts';
import { deleteObjectsBestEffort } from '../storage/delete-objects.ts';
import type { AiClient } from '../ai-service/client.ts';
import { pruneJobEvents } from './events-store.ts';
import type { JobLifecycle } from './lifecycle.ts';
import { queueReindexing } from './reindex.ts';

export const ABANDONED_UPLOAD_GRACE_MS = 60 * 60_000;

export interface HousekeepingDeps {
  sql: Sql;
  storage: StorageDriver;
  jobs: JobLifecycle;
  ai: AiClient;
  logger: Logger;
  now(): Date;
  /** On the embedded database only: the API's requests in flight, which each VACUUM waits for. */
  vacuum?: { requests: RequestGate };
}

export interface HousekeepingOutcome {
  abandonedUploads: number;
  objectsFailed: number;
  eventsPruned: number;
  reindexQueued: number;
  jobsSettled: number;
  /** The embedded database's tables vacuumed or analysed (none on a server). */
  tablesMaintained: TableMaintenance[];
}

export async function runHousekeeping(deps: HousekeepingDeps): Promise<HousekeepingOutcome> {
  const now = deps.now();
  const keys = await deleteAbandonedUploads(deps.sql, now, ABANDONED_UPLOAD_GRACE_MS);
  const objects = await deleteObjectsBestEffort(deps.storage, keys, deps.logger, { task: 'housekeeping' });
  const eventsPruned = await pruneJobEvents(deps.sql, now);
  const { queued } = await queueReindexing(deps);
  const jobsSettled = await deps.jobs.settleStopped(now);
  // Last: what the steps above deleted is vacuumed in the same pass.
  const tablesMaintained = deps.vacuum
    ? await vacuumWhereNeeded(deps.sql, deps.vacuum.requests).catch((error: unknown) => {
        deps.logger.warn({ err: error }, 'the embedded database could not be vacuumed; tried again at the next housekeeping');
        return [];
      })
    : [];
  return { abandonedUploads: keys.length, objectsFailed: objects.failed, eventsPruned, reindexQueued: queued, jobsSettled, tablesMaintained };
}

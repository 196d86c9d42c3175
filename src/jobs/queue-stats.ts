/**
 * The queue's state as clients see it, from the `jobs` table (pg-boss only carries job ids):
 * how many jobs wait, run and failed, and since when the oldest has waited. Read by
 * admin.system.status and by GET /metrics at every scrape (the jobs_status index serves it).
 */
import type { Db } from '../db/db.ts';

export interface QueueStats {
  depth: number;
  running: number;
  failed: number;
  oldestQueuedAt: Date | null;
}

export async function queueStats(sql: Db): Promise<QueueStats> {
  const [row] = await sql<QueueStats[]>`
    select (select count(*) from jobs where status = 'queued')::int as depth,
           (select count(*) from jobs where status = 'running')::int as running,
           (select count(*) from jobs where status = 'failed')::int as failed,
           (select min(created_at) from jobs where status = 'queued') as "oldestQueuedAt"`;
  return row!;
}

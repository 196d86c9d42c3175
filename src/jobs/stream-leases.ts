/**
 * The jobs.stream cap: five concurrent streams per user (decisions.md, "Job event stream"). On the
 * embedded database (one process) the open streams are counted in memory. On a database server
 * each open stream holds a lease row in `stream_leases` (sql/0010_rate_limits.sql), so the cap
 * holds across every API instance:
 *
 * - taking a slot locks the user (a transaction-scoped advisory lock), then inserts a lease only
 *   while fewer than five of the user's leases are unexpired: two instances opening at once take
 *   turns, and the second counts the first's lease;
 * - an instance refreshes the leases of its open streams every REFRESH_MS in one statement, and
 *   deletes a stream's lease when the stream ends;
 * - an instance that dies stops refreshing: its leases expire within LEASE_MS, after which they no
 *   longer count (the hourly sweeper deletes them), so a crash locks nobody out for longer.
 *
 * Lease times are the database's clock (`now()`), the one clock every instance shares.
 */
import type { Sql } from '../db/connection.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../logger.ts';

/** Concurrent streams per user (decisions.md reads the specification's "per the service" as per user). */
export const MAX_STREAMS_PER_USER = 5;
/** How long a lease counts without a refresh: four refreshes may be missed before it lapses. */
export const LEASE_MS = 60_000;
const REFRESH_MS = 15_000;
/** The first half of the two-key advisory lock of a user's leases (an arbitrary constant of this service). */
const LEASE_LOCK = 731_044_202;

/** Gives back a slot taken by `take`; safe to call more than once. */
export type ReleaseSlot = () => void;

export interface StreamSlots {
  /** Takes one of the user's slots; answers its release, or null when every slot is taken. */
  take(userId: string): Promise<ReleaseSlot | null>;
}

/** Open streams per user in this process's memory (the embedded database: one process). */
export function memorySlots(max = MAX_STREAMS_PER_USER): StreamSlots {
  const counts = new Map<string, number>();
  return {
    async take(userId) {
      const open = counts.get(userId) ?? 0;
      if (open >= max) return null;
      counts.set(userId, open + 1);
      return once(() => {
        const left = (counts.get(userId) ?? 1) - 1;
        if (left === 0) counts.delete(userId);
        else counts.set(userId, left);
      });
    },
  };
}

export interface LeaseOptions {
  sql: Sql;
  logger: Pick<Logger, 'warn'>;
  /** Names this API instance on its leases. */
  instanceId: string;
  max?: number;
  leaseMs?: number;
  refreshMs?: number;
}

/** Slots as lease rows shared by every instance on the database (see the top of this file). */
export function leasedSlots(options: LeaseOptions): StreamSlots {
  const { sql, logger, instanceId } = options;
  const max = options.max ?? MAX_STREAMS_PER_USER;
  const leaseMs = options.leaseMs ?? LEASE_MS;
  const held = new Set<string>();
  let timer: NodeJS.Timeout | undefined;

  const refresh = () => {
    if (held.size === 0) return;
    sql`update stream_leases set expires_at = now() + ${leaseMs}::int * interval '1 millisecond' where id = any(${[...held]}::text[])`.catch((error: unknown) =>
      logger.warn({ err: error, leases: held.size }, 'stream leases not refreshed; the next refresh tries again'),
    );
  };

  return {
    async take(userId) {
      const id = newId('lease');
      if (!(await takeLease(sql, { id, userId, instanceId, max, leaseMs }))) return null;
      held.add(id);
      if (!timer) {
        timer = setInterval(refresh, options.refreshMs ?? REFRESH_MS);
        timer.unref();
      }
      return once(() => {
        held.delete(id);
        if (held.size === 0) {
          clearInterval(timer);
          timer = undefined;
        }
        // Not refreshed any more: a lease that cannot be deleted now lapses within leaseMs.
        sql`delete from stream_leases where id = ${id}`.catch((error: unknown) => logger.warn({ err: error, leaseId: id }, 'stream lease not deleted; it lapses on its own'));
      });
    },
  };
}

/**
 * Inserts the lease unless the user already holds `max` unexpired ones; answers whether it did.
 * The advisory lock makes concurrent takes of one user take turns, and the insert, a statement
 * that starts once the lock is held, counts every lease committed before it.
 */
export async function takeLease(sql: Sql, lease: { id: string; userId: string; instanceId: string; max: number; leaseMs: number }): Promise<boolean> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LEASE_LOCK}::int, hashtext(${lease.userId}))`;
    const inserted = await tx`
      insert into stream_leases (id, user_id, instance_id, expires_at)
      select ${lease.id}, ${lease.userId}, ${lease.instanceId}, now() + ${lease.leaseMs}::int * interval '1 millisecond'
      where (select count(*) from stream_leases where user_id = ${lease.userId} and expires_at > now()) < ${lease.max}
      returning id`;
    return inserted.length > 0;
  });
}

/** Deletes leases that lapsed (the hourly sweeper), at most `limit`; answers how many went. */
export async function deleteLapsedLeases(sql: Sql, limit: number): Promise<{ count: number }> {
  return sql`
    delete from stream_leases where id in (
      select id from stream_leases where expires_at <= now() limit ${limit})
    and expires_at <= now()`;
}

function once(fn: () => void): ReleaseSlot {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}

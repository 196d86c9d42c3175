/**
 * /readyz: the database must answer within 2 seconds. Concurrent probes share one check, so a
 * burst of probes against a slow database costs one query, not one each. The answer comes by the
 * timeout whatever the ping does; a ping that gives up by its own deadline (Database.ping, the
 * same 2 s) is a timeout too, and it is what tells the pool that its connections may be stuck
 * (src/db/connection-watch.ts).
 */
import { DatabaseDeadlineError } from '../db/deadline.ts';

export type ReadinessResult = { ok: true } | { ok: false; database: 'timeout' | 'unreachable' };

export function createReadinessCheck(ping: () => Promise<void>, timeoutMs = 2000): () => Promise<ReadinessResult> {
  let inFlight: Promise<ReadinessResult> | undefined;
  return () => {
    inFlight ??= run().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  async function run(): Promise<ReadinessResult> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<ReadinessResult>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, database: 'timeout' }), timeoutMs);
    });
    const query = ping().then(
      (): ReadinessResult => ({ ok: true }),
      (error: unknown): ReadinessResult => ({ ok: false, database: error instanceof DatabaseDeadlineError ? 'timeout' : 'unreachable' }),
    );
    try {
      return await Promise.race([query, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

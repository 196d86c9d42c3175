/**
 * /readyz: the database must answer within 2 seconds. Concurrent probes share one check, so a
 * burst of probes against a slow database costs one query, not one each.
 */
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
      (): ReadinessResult => ({ ok: false, database: 'unreachable' }),
    );
    try {
      return await Promise.race([query, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

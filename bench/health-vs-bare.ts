/**
 * Throughput of system.health (GET /api/v1/health) through the full stack (every middleware, REST
 * routing, the binding layer, the real handler) against a bare node:http server sending the same
 * JSON. Both servers live in this process and are loaded in turn by one child process.
 *
 * The machine may be small and shared (2 CPUs, other jobs running), so throughput drifts between
 * seconds: short windows, many rounds, alternating order, and the ratio taken per round (full
 * against the bare run right next to it) before the median. Because requests/s also depends on
 * how much CPU the scheduler happened to give us, the server's CPU time per request is reported
 * too: its ratio (bare/full) is what the throughput ratio would be on an idle machine where the
 * server, not the client, is the bottleneck.
 */
import type { Database } from '../src/db/connection.ts';
import { median, openBenchDatabase, startBareServer, startFullApp, startLoader } from './support.ts';

export const HEALTH_AIM = 0.5; // full-stack requests/s at least half of bare node:http

export interface HealthResult {
  fullRps: number;
  bareRps: number;
  /** Median of the per-round full/bare requests/s ratios. */
  ratio: number;
  /** Server CPU microseconds per request (medians). */
  fullCpuUs: number;
  bareCpuUs: number;
}

type Target = 'full' | 'bare';

export async function benchHealthVsBare(db: Database, { rounds = 6, connections = 32, warmupMs = 500, durationMs = 2000 } = {}): Promise<HealthResult> {
  const full = await startFullApp(db);
  const bare = await startBareServer();
  const loader = startLoader();
  const urls: Record<Target, string> = { full: `${full.url}/api/v1/health`, bare: `${bare.url}/` };
  const measure = async (name: Target, ms = durationMs) => {
    const before = process.cpuUsage();
    const result = await loader.run({ url: urls[name], connections, warmupMs, durationMs: ms });
    const used = process.cpuUsage(before);
    // Non-200 answers would mean we measured an error path (e.g. 429), not health.
    if (result.errors > 0) throw new Error(`${name}: ${result.errors} failed requests`);
    return { rps: result.rps, cpuUs: (used.user + used.system) / result.total, clientCpu: result.clientCpu };
  };
  const rps: Record<Target, number[]> = { full: [], bare: [] };
  const cpuUs: Record<Target, number[]> = { full: [], bare: [] };
  const ratios: number[] = [];
  try {
    // Untimed: lets the JIT optimise both servers and the client before the first round.
    await measure('full', 1000);
    await measure('bare', 1000);
    for (let round = 1; round <= rounds; round++) {
      const order: Target[] = round % 2 ? ['full', 'bare'] : ['bare', 'full'];
      const line: string[] = [];
      for (const name of order) {
        const m = await measure(name);
        rps[name].push(m.rps);
        cpuUs[name].push(m.cpuUs);
        line.push(`${name} ${Math.round(m.rps)} req/s ${m.cpuUs.toFixed(0)} µs cpu/req (client cpu ${Math.round(m.clientCpu * 100)}%)`);
      }
      ratios.push(rps.full.at(-1)! / rps.bare.at(-1)!);
      console.log(`  health round ${round}: ${line.join(', ')}; ratio ${ratios.at(-1)!.toFixed(2)}`);
    }
  } finally {
    loader.close();
    await full.close();
    await bare.close();
  }
  return {
    fullRps: median(rps.full),
    bareRps: median(rps.bare),
    ratio: median(ratios),
    fullCpuUs: median(cpuUs.full),
    bareCpuUs: median(cpuUs.bare),
  };
}

if (import.meta.main) {
  const db = await openBenchDatabase();
  try {
    const r = await benchHealthVsBare(db);
    console.log(
      `full ${Math.round(r.fullRps)} req/s, bare ${Math.round(r.bareRps)} req/s, ratio ${r.ratio.toFixed(2)} (aim >= ${HEALTH_AIM});` +
        ` cpu/req full ${r.fullCpuUs.toFixed(0)} µs, bare ${r.bareCpuUs.toFixed(0)} µs, ratio ${(r.bareCpuUs / r.fullCpuUs).toFixed(2)}`,
    );
  } finally {
    await db.close();
  }
}

/**
 * Throughput of system.health (GET /api/v1/health) through the full stack (every middleware, REST
 * routing, the binding layer, the real handler) against a bare node:http server sending the same
 * JSON. Both servers live in this process and are loaded in turn by one child process. The
 * machine may be shared (2 CPUs here, other jobs running), so throughput drifts a lot between
 * seconds: short windows, many rounds, alternating order, and the ratio taken per round (full
 * against the bare run right next to it) before the median, which cancels most of the drift.
 */
import type { Database } from '../src/db/connection.ts';
import { median, openBenchDatabase, startBareServer, startFullApp, startLoader } from './support.ts';

export const HEALTH_AIM = 0.5; // full-stack requests/s at least half of bare node:http

export interface HealthResult {
  fullRps: number;
  bareRps: number;
  /** Median of the per-round full/bare ratios. */
  ratio: number;
}

export async function benchHealthVsBare(
  db: Database,
  { rounds = 6, connections = 32, warmupMs = 500, durationMs = 2000 } = {},
): Promise<HealthResult> {
  const full = await startFullApp(db);
  const bare = await startBareServer();
  const loader = startLoader();
  const urls = { full: `${full.url}/api/v1/health`, bare: `${bare.url}/` };
  const cpu = { full: [] as number[], bare: [] as number[] };
  const measure = async (name: keyof typeof urls, ms = durationMs) => {
    const started = performance.now();
    const serverCpu = process.cpuUsage();
    const result = await loader.run({ url: urls[name], connections, warmupMs, durationMs: ms });
    const used = process.cpuUsage(serverCpu);
    // Non-200 answers would mean we measured an error path (e.g. 429), not health.
    if (result.errors > 0) throw new Error(`${name}: ${result.errors} failed requests`);
    cpu[name].push((used.user + used.system) / 1000 / (performance.now() - started));
    return result;
  };
  const rps = { full: [] as number[], bare: [] as number[] };
  const ratios: number[] = [];
  try {
    // Untimed: lets the JIT optimise both servers and the client before the first round.
    await measure('full', 1000);
    await measure('bare', 1000);
    for (let round = 1; round <= rounds; round++) {
      const order = round % 2 ? (['full', 'bare'] as const) : (['bare', 'full'] as const);
      const line: string[] = [];
      for (const name of order) {
        const result = await measure(name);
        rps[name].push(result.rps);
        line.push(`${name} ${Math.round(result.rps)} req/s (cpu server ${pct(cpu[name].at(-1)!)} client ${pct(result.clientCpu)})`);
      }
      ratios.push(rps.full.at(-1)! / rps.bare.at(-1)!);
      console.log(`  health round ${round}: ${line.join(', ')}, ratio ${ratios.at(-1)!.toFixed(2)}`);
    }
  } finally {
    loader.close();
    await full.close();
    await bare.close();
  }
  return { fullRps: median(rps.full), bareRps: median(rps.bare), ratio: median(ratios) };
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

if (import.meta.main) {
  const db = await openBenchDatabase();
  try {
    const r = await benchHealthVsBare(db);
    console.log(`full ${Math.round(r.fullRps)} req/s, bare ${Math.round(r.bareRps)} req/s, ratio ${r.ratio.toFixed(2)} (aim >= ${HEALTH_AIM})`);
  } finally {
    await db.close();
  }
}

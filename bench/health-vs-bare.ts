/**
 * Throughput of system.health (GET /api/v1/health) through the full stack (every middleware, REST
 * routing, the binding layer, the real handler) against a bare node:http server sending the same
 * JSON. Both servers live in this process and are loaded in turn by a child process; the order
 * alternates per round so slow drift (CPU frequency, GC, JIT) does not favour either side, and
 * the median round counts.
 */
import type { Database } from '../src/db/connection.ts';
import { median, openBenchDatabase, runLoad, startBareServer, startFullApp } from './support.ts';

export const HEALTH_AIM = 0.5; // full-stack requests/s at least half of bare node:http

export interface HealthResult {
  fullRps: number;
  bareRps: number;
  ratio: number;
}

export async function benchHealthVsBare(
  db: Database,
  { rounds = 3, connections = 32, warmupMs = 1000, durationMs = 4000 } = {},
): Promise<HealthResult> {
  const full = await startFullApp(db);
  const bare = await startBareServer();
  const targets = { full: `${full.url}/api/v1/health`, bare: `${bare.url}/` };
  const rps: Record<keyof typeof targets, number[]> = { full: [], bare: [] };
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (['full', 'bare'] as const) : (['bare', 'full'] as const);
      for (const name of order) {
        const result = await runLoad(targets[name], connections, warmupMs, durationMs);
        // Non-200 answers would mean we measured an error path (e.g. 429), not health.
        if (result.errors > 0) throw new Error(`${name}: ${result.errors} failed requests`);
        rps[name].push(result.rps);
        console.log(`  health round ${round + 1} ${name.padEnd(4)} ${Math.round(result.rps)} req/s`);
      }
    }
  } finally {
    await full.close();
    await bare.close();
  }
  const fullRps = median(rps.full);
  const bareRps = median(rps.bare);
  return { fullRps, bareRps, ratio: fullRps / bareRps };
}

if (import.meta.main) {
  const db = await openBenchDatabase();
  try {
    const r = await benchHealthVsBare(db);
    console.log(`full ${Math.round(r.fullRps)} req/s, bare ${Math.round(r.bareRps)} req/s, ratio ${r.ratio.toFixed(2)} (aim >= ${HEALTH_AIM})`);
  } finally {
    await db.close();
  }
}

/**
 * What the upgrade runs take from the environment (scripts/test-upgrade.sh sets them):
 *   UPGRADE_SERVER_URL        a PostgreSQL 15+ server with pgvector (postgres://...); without it,
 *                             each file starts a throwaway one (scripts/pg-server.sh) and stops it
 *   UPGRADE_PREVIOUS_RELEASE  the previous release's tree, with its node_modules (releases/previous.json)
 *   UPGRADE_CHUNKS            chunks of the large workspace (default 100000)
 *   UPGRADE_PHASE_S           seconds of load in the phases old, mixed and new (default 20)
 *   UPGRADE_CLIENTS           users of the load (default 3)
 * and runs the harness, printing its timings and report.
 */
import { startPostgres } from '../../bench/soak-service.ts';
import { runUpgrade, type UpgradeOptions, type UpgradeResult } from './harness.ts';

export function numberSetting(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new Error(`${name} must be a positive whole number, got "${value}"`);
  return Number(value);
}

/** The server of the runs: UPGRADE_SERVER_URL, or a throwaway one. */
export async function upgradeServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const given = process.env.UPGRADE_SERVER_URL;
  if (given) return { url: given, stop: async () => {} };
  return startPostgres();
}

/** Runs the harness and prints what it did: the steps' times, the migrations applied, the per-phase report. */
export async function runAndPrint(title: string, options: Omit<UpgradeOptions, 'database' | 'log'>): Promise<UpgradeResult> {
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    console.log(line);
  };
  log(`${title}: old ${options.old.dir}, new ${options.new.dir}; ${options.sizes.join(' + ')} chunks, ${options.clients} clients`);
  const result = await runUpgrade({ ...options, database: `upgrade_${Date.now().toString(36)}`, log });
  for (const line of result.verdict.report) log(line);
  log(`times: ${result.timings.map((timing) => `${timing.step} ${timing.seconds.toFixed(1)} s`).join('; ')}`);
  return result;
}

/**
 * Start-up of `node src/main.ts serve` on the embedded database, as `make start` runs it: the time
 * from spawning the process to the first 200 from GET /readyz, for
 *   - a fresh data directory, started from the migrated template (src/composition/database-template.ts);
 *   - a restart on that directory;
 *   - the baseline in the same run: a fresh data directory with `--no-template` (PGlite's initdb,
 *     then every migration: the path every fresh start took before the template);
 *   - the floor in the same run (start-floor.ts): a process that only opens the embedded database
 *     as `serve` does, fresh from the template and again on that directory, and answers one query.
 *     The service's fresh start and restart are reported as ratios to these (issue 39: a start
 *     should pay for little more than its database; aims 1.5 fresh, 1.2 restart).
 * Also the stop: SIGTERM to exit. Rounds alternate the order of the two fresh starts; medians are
 * reported. The template is built first if missing (that time is printed, not counted: it is paid
 * once per migration change, normally at install). A measurement, not a test: nothing fails when
 * a figure misses its aim.
 *   node bench/start.ts
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ensureTemplate } from '../src/composition/database-template.ts';
import { median } from './statistics.ts';
import { printRows } from './print-rows.ts';

export const START_AIM_MS = { fresh: 2500, restart: 1500 };
/** The start as a ratio to the floor (start-floor.ts) in the same run. */
export const FLOOR_AIM = { fresh: 1.5, restart: 1.2 };

const root = fileURLToPath(new URL('../', import.meta.url));

export interface StartMeasure {
  /** Spawn to the first 200 from /readyz. */
  readyMs: number;
  /**
   * When each part of the start finished, ms since the server process started (its `listening`
   * log line: database, ai, migrations, app, worker when it is a process, listening); what the
   * first phase does not account for before it is Node's start and the imports.
   */
  phases: Record<string, number>;
  /** SIGTERM to exit. */
  stopMs: number;
  exitCode: number | null;
}

export interface StartBenchResult {
  /** Medians of the rounds, ms. */
  freshMs: number;
  restartMs: number;
  baselineMs: number;
  /** The floor (start-floor.ts), medians: a fresh data directory from the template, and a reopen of it. */
  floorFreshMs: number;
  floorRestartMs: number;
  stopMs: number;
  /** Median of each phase (StartMeasure.phases) over the fresh starts and over the restarts. */
  freshPhases: Record<string, number>;
  restartPhases: Record<string, number>;
  /** Every stop exited 0. */
  cleanStops: boolean;
  /** Set when the template had to be built first (ms). */
  templateBuildMs: number | undefined;
}

/** Spawn to `ready` of start-floor.ts on dataDir: the embedded database opened and one query answered. */
export async function measureFloor(dataDir: string): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, ['bench/start-floor.ts', dataDir], { cwd: root, env: { ...process.env, DATABASE_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ready = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line === 'ready') resolve(performance.now() - started);
    });
    exited.then(([code]) => reject(new Error(`the floor exited (${code}) before ready: ${stderr.trim()}`)), reject);
  });
  await exited;
  return ready;
}

/** Starts the server on dataDir (port chosen by the OS), waits for /readyz 200, stops it with SIGTERM. */
export async function measureStart(dataDir: string, args: string[] = []): Promise<StartMeasure> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  delete env.DATABASE_URL;
  const started = performance.now();
  const child = spawn(process.execPath, ['src/main.ts', 'serve', ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    let phases: Record<string, number> = {};
    const port = await new Promise<number>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout });
      lines.on('line', (line) => {
        const entry = parseLine(line);
        if (entry?.msg === 'listening' && typeof entry.port === 'number') {
          phases = { ...(entry.phases as Record<string, number> | undefined), listening: entry.startMs as number };
          resolve(entry.port);
        }
      });
      exited.then(([code]) => reject(new Error(`the server exited (${code}) before listening: ${stderr.trim()}`)), reject);
    });
    while ((await fetch(`http://127.0.0.1:${port}/readyz`)).status !== 200) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const readyMs = performance.now() - started;
    const stopping = performance.now();
    child.kill('SIGTERM');
    const [exitCode] = await exited;
    return { readyMs, phases, stopMs: performance.now() - stopping, exitCode };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

export async function benchStart({ rounds = 3 } = {}): Promise<StartBenchResult> {
  const templateStarted = performance.now();
  const { built } = await ensureTemplate();
  const templateBuildMs = built ? performance.now() - templateStarted : undefined;
  if (templateBuildMs !== undefined) console.log(`  built the migrated template first: ${(templateBuildMs / 1000).toFixed(1)} s (once per migration change)`);

  const scratch = await mkdtemp(join(tmpdir(), 'workspace-api-bench-start-'));
  const fresh: number[] = [];
  const restart: number[] = [];
  const freshPhases: Record<string, number>[] = [];
  const restartPhases: Record<string, number>[] = [];
  const baseline: number[] = [];
  const floorFresh: number[] = [];
  const floorRestart: number[] = [];
  const stops: StartMeasure[] = [];
  try {
    // Untimed: warms the file cache and Node's compile cache, as any start after install would have.
    await measureStart(join(scratch, 'warm-up'));
    for (let round = 1; round <= rounds; round++) {
      const dir = join(scratch, `round-${round}`);
      const runFresh = async () => {
        const m = await measureStart(join(dir, 'template'));
        fresh.push(m.readyMs);
        freshPhases.push(m.phases);
        stops.push(m);
        const r = await measureStart(join(dir, 'template'));
        restart.push(r.readyMs);
        restartPhases.push(r.phases);
        stops.push(r);
      };
      const runBaseline = async () => {
        const m = await measureStart(join(dir, 'initdb'), ['--no-template']);
        baseline.push(m.readyMs);
        stops.push(m);
      };
      const runFloor = async () => {
        floorFresh.push(await measureFloor(join(dir, 'floor')));
        floorRestart.push(await measureFloor(join(dir, 'floor')));
      };
      for (const run of round % 2 ? [runFloor, runFresh, runBaseline] : [runBaseline, runFresh, runFloor]) await run();
      console.log(
        `  start round ${round}: fresh ${ms(fresh.at(-1)!)}, restart ${ms(restart.at(-1)!)}, ` +
          `fresh without template ${ms(baseline.at(-1)!)}, floor ${ms(floorFresh.at(-1)!)} fresh and ${ms(floorRestart.at(-1)!)} reopened; stops ${stops
            .slice(-3)
            .map((s) => `${ms(s.stopMs)} (exit ${s.exitCode})`)
            .join(', ')}`,
      );
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return {
    freshMs: median(fresh),
    restartMs: median(restart),
    baselineMs: median(baseline),
    floorFreshMs: median(floorFresh),
    floorRestartMs: median(floorRestart),
    stopMs: median(stops.map((s) => s.stopMs)),
    freshPhases: medianPhases(freshPhases),
    restartPhases: medianPhases(restartPhases),
    cleanStops: stops.every((s) => s.exitCode === 0),
    templateBuildMs,
  };
}

export async function startRows(): Promise<string[][]> {
  console.log('start, node src/main.ts serve to GET /readyz 200 (embedded database):');
  let r: StartBenchResult;
  try {
    r = await benchStart();
  } catch (error) {
    // A server that does not start is a finding to print, not a reason to lose the other benchmarks' table.
    console.log(`  start benchmark failed: ${error instanceof Error ? error.message : String(error)}`);
    return [['start', 'failed (see above)', `<= ${seconds(START_AIM_MS.fresh)} fresh, <= ${seconds(START_AIM_MS.restart)} restart`]];
  }
  return [
    ['start, fresh data dir (from the template)', `${seconds(r.freshMs)}`, `<= ${seconds(START_AIM_MS.fresh)}`],
    ['start, fresh / floor (the database alone, fresh from the template)', `${(r.freshMs / r.floorFreshMs).toFixed(2)}  (${seconds(r.freshMs)} / ${seconds(r.floorFreshMs)})`, `<= ${FLOOR_AIM.fresh}`],
    ['start, restart / floor (the database alone, reopened)', `${(r.restartMs / r.floorRestartMs).toFixed(2)}  (${seconds(r.restartMs)} / ${seconds(r.floorRestartMs)})`, `<= ${FLOOR_AIM.restart}`],
    ['  baseline: fresh without template (initdb) / fresh', `${(r.baselineMs / r.freshMs).toFixed(1)}x  (${seconds(r.baselineMs)} / ${seconds(r.freshMs)})`, ''],
    ['  phases, fresh (done at, since the process started)', phaseList(r.freshPhases), ''],
    ['start, restart on that data dir', `${seconds(r.restartMs)}`, `<= ${seconds(START_AIM_MS.restart)}`],
    ['  phases, restart', phaseList(r.restartPhases), ''],
    ['  stop, SIGTERM to exit (median)', `${seconds(r.stopMs)}, ${r.cleanStops ? 'every exit 0' : 'NOT every exit 0'}`, ''],
  ];
}

/** Each phase's median over the runs, in the order they finish. */
function medianPhases(runs: Record<string, number>[]): Record<string, number> {
  const names = [...new Set(runs.flatMap((run) => Object.keys(run)))];
  const medians = names.map((name) => [name, median(runs.flatMap((run) => (run[name] === undefined ? [] : [run[name]])))] as const);
  return Object.fromEntries(medians.sort((a, b) => a[1] - b[1]));
}

function phaseList(phases: Record<string, number>): string {
  return Object.entries(phases)
    .map(([name, at]) => `${name} ${ms(at)}`)
    .join(', ');
}

function parseLine(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function ms(value: number): string {
  return `${Math.round(value)} ms`;
}

function seconds(value: number): string {
  return `${(value / 1000).toFixed(2)} s`;
}

if (import.meta.main) {
  const rows = [['measure', 'result', 'aim'], ...(await startRows())];
  printRows(rows);
}

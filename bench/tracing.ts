/**
 * What tracing costs (issue 41; docs/observability.md): p50 latency of system.health
 * (`GET /api/v1/health`) and workspaces.list (`GET /api/v1/workspaces`: session, access check, a
 * query) on two apps at once, each in its own process on its own embedded database
 * (tracing-app.ts):
 *
 * - this tree's app, measured both ways in turn: `off` (no exporter: the SDK not running, as by
 *   default) and `on` (the SDK started in it, exporting every span over OTLP/HTTP, protobuf as by
 *   default, to a receiver in this process, sampling everything), turned on and off between
 *   windows;
 * - `before`: the tree just before tracing was added (a git worktree of the parent of the commit
 *   that added src/telemetry/tracing.ts, with its own dependencies), today's baseline. Left out,
 *   saying why, where git cannot make it.
 *
 * One open-loop probe (latency-probe.ts) sends both routes of one variant a request every 20 ms
 * for a window, the others idle, then the next variant's; each round starts with another. All of
 * that five times over, each time with new processes started in another order. On / off is each
 * process's own ratio (tracing's cost alone: one process of a tree ran 7% slower than another of
 * the same tree for its whole life, as much as tracing costs), the median of the five reported;
 * off / before compares medians of p50s across processes. About 4 minutes. Aims: on/off p50 at
 * most 1.05; off/before within noise (about 1.00 ± 0.05). A measurement, not a test: nothing fails
 * when a figure misses its aim.
 *   node bench/tracing.ts
 */
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { PROBE_INTERVAL_MS, startProbe } from './api-latency.ts';
import type { ProbeTarget } from './latency-probe.ts';
import { printRows } from './print-rows.ts';
import type { AppMessage } from './tracing-app.ts';
import { median, percentile } from './statistics.ts';

export const TRACING_ON_AIM = 1.05;
const root = fileURLToPath(new URL('../', import.meta.url));
const run = promisify(execFile);

type Variant = 'off' | 'on' | 'before';
type Targets = { health: ProbeTarget; list: ProbeTarget };

export interface TracingResult {
  /** p50 ms by variant and target; `before` absent when its tree could not be had (`missing` says why). */
  p50: Partial<Record<Variant, { health: number; list: number }>>;
  /** Tracing on / off p50 of each process of this tree (measured both ways in the same process), one per repetition. */
  onOff: { health: number[]; list: number[] };
  /** What the receiver was sent: exports (batches of spans) and their bytes. */
  exported: { exports: number; bytes: number };
  missing?: string;
}

/**
 * A local OTLP/HTTP receiver that only counts what it is sent: the exports and their bytes. The
 * exporter speaks its default protocol (protobuf), as a deployment's would; an empty 200 is a
 * valid answer to it.
 */
async function countingReceiver() {
  const received = { exports: 0, bytes: 0 };
  const server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => (received.bytes += chunk.length));
    request.on('end', () => {
      received.exports++;
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, close: () => new Promise((resolve) => server.close(resolve)) };
}

/**
 * The tree before tracing: a detached worktree with the node_modules scripts/tree-modules.sh gives
 * it (this tree's while ours pin its packages the same, else its own, installed once and cached),
 * or why not.
 */
async function treeBeforeTracing(): Promise<{ dir: string; remove(): Promise<void> } | string> {
  let dir: string | undefined;
  let step = 'git could not make it';
  const remove = async () => {
    if (!dir) return;
    await run('git', ['worktree', 'remove', '--force', dir], { cwd: root }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const { stdout } = await run('git', ['log', '--diff-filter=A', '--format=%H', '--', 'src/telemetry/tracing.ts'], { cwd: root });
    const added = stdout.trim().split('\n').pop();
    if (!added) return 'no commit adds src/telemetry/tracing.ts in this checkout';
    dir = await mkdtemp(join(tmpdir(), 'workspace-api-before-tracing-'));
    await run('git', ['worktree', 'add', '--detach', dir, `${added}^`], { cwd: root });
    step = 'its dependencies could not be installed';
    const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'workspace-api', 'before-tracing');
    const modules = await run(join(root, 'scripts', 'tree-modules.sh'), [dir, cache], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    console.log(`  the tree before tracing (${added.slice(0, 7)}^) with ${modules.stdout.trim()}`);
    return { dir, remove };
  } catch (error) {
    await remove();
    return `${step}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`;
  }
}

/** An app (tracing-app.ts: its own embedded database, a tenant) listens well within this. */
const START_TIMEOUT_MS = 120_000;

interface App {
  child: ChildProcess;
  targets: Targets;
  /** Starts or shuts down the app's tracing; resolves once it is done. */
  trace(on: boolean): Promise<void>;
}

async function startApp(tree: string, env: Record<string, string>): Promise<App> {
  const child = fork(fileURLToPath(new URL('./tracing-app.ts', import.meta.url)), [tree], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // An app that cannot start (its tree fails to load) exits instead of answering: say so rather than wait for ever.
  const answered = once(child, 'message') as Promise<[Targets]>;
  const exited = once(child, 'exit').then(([code, signal]) => {
    throw new Error(`the app of ${tree} exited before it listened (${signal ?? `code ${code}`})`);
  });
  // Its later exit, when the bench closes it, is no failure.
  exited.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the app of ${tree} did not listen within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
  });
  try {
    const [targets] = await Promise.race([answered, exited, late]);
    const trace = async (on: boolean) => {
      const answer = once(child, 'message') as Promise<[{ tracing: boolean }]>;
      child.send({ tracing: on } satisfies AppMessage);
      const [{ tracing }] = await answer;
      if (tracing !== on) throw new Error(`the app of ${tree} could not turn tracing ${on ? 'on' : 'off'}`);
    };
    return { child, targets, trace };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

export async function benchTracing({ repetitions = 5, rounds = 3, windowMs = 3000 } = {}): Promise<TracingResult> {
  const receiver = await countingReceiver();
  const before = await treeBeforeTracing();
  const probe = startProbe();
  // This tree's app is measured both ways, off and on, in the same process (tracing turned on and
  // off between windows); the tree before tracing in a process of its own, never traced.
  const processes: [string, string, Record<string, string>][] = [
    ['this', root, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'always_on', OTEL_SDK_DISABLED: 'false' }],
    ...(typeof before === 'string' ? [] : [['before', before.dir, { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: '' }] as [string, string, Record<string, string>]]),
  ];
  const variants: Variant[] = ['off', 'on', ...(typeof before === 'string' ? [] : ['before' as const])];
  // Each variant's p50s, one per repetition.
  const p50s = new Map<string, number[]>();
  try {
    for (let repetition = 0; repetition < repetitions; repetition++) {
      // Fresh processes each repetition, started in another order: one process of a tree came out
      // 7% slower than another process of the same tree for the whole of its life (its place in
      // memory, the JIT's choices), as much as tracing costs. Tracing on against off is therefore
      // measured within one process: that difference is tracing's alone. Off against the tree
      // before tracing is across processes, hence the repetitions.
      const order = processes.map((_, k) => processes[(repetition + k) % processes.length]!);
      const apps = new Map<string, App>();
      try {
        for (const [name, tree, env] of order) apps.set(name, await startApp(tree, env));
        const self = apps.get('this')!;
        const appOf = (variant: Variant) => apps.get(variant === 'before' ? 'before' : 'this')!;
        const targetsOf = (variant: Variant) => [
          { ...appOf(variant).targets.health, name: `${variant}.health` },
          // Half an interval after the other: each request's latency its own, not partly the
          // other's (sent together, one waited for the other's handling, tracing's cost in it).
          { ...appOf(variant).targets.list, name: `${variant}.list`, offsetMs: PROBE_INTERVAL_MS / 2 },
        ];
        // Untimed: every app's code optimised before the first window, this tree's both ways.
        await self.trace(true);
        await probe.window(
          variants.flatMap((variant) => targetsOf(variant)),
          3000,
        ).result;
        let tracing = true;
        const latencies = new Map<string, number[]>();
        for (let round = 0; round < rounds; round++) {
          // One variant at a time, the others idle: probed together, the apps took the two cores
          // from one another, and the order of the probe's requests moved the ratios as much as
          // tracing. Each round starts with another variant.
          for (let k = 0; k < variants.length; k++) {
            const variant = variants[(repetition + round + k) % variants.length]!;
            if (variant !== 'before' && tracing !== (variant === 'on')) {
              tracing = variant === 'on';
              await self.trace(tracing);
            }
            await new Promise((resolve) => setTimeout(resolve, 300));
            const result = await probe.window(targetsOf(variant), windowMs).result;
            if (result.errors > 0) throw new Error(`${result.errors} requests failed`);
            for (const [name, values] of Object.entries(result.latencies)) latencies.set(name, [...(latencies.get(name) ?? []), ...values]);
          }
        }
        for (const [name, values] of latencies) p50s.set(name, [...(p50s.get(name) ?? []), percentile(values, 50)]);
      } finally {
        await Promise.all(
          [...apps.values()].map(async ({ child }) => {
            // One that crashed meanwhile has exited already: no stop to send, no exit to wait for.
            if (child.exitCode !== null || child.signalCode !== null) return;
            const exit = once(child, 'exit');
            child.send('stop' satisfies AppMessage);
            await exit;
          }),
        );
      }
    }
    const p50 = (name: string) => median(p50s.get(name) ?? [NaN]);
    const ratios = (name: string) => (p50s.get(`on.${name}`) ?? []).map((on, k) => on / p50s.get(`off.${name}`)![k]!);
    return {
      p50: Object.fromEntries(variants.map((variant) => [variant, { health: p50(`${variant}.health`), list: p50(`${variant}.list`) }])),
      onOff: { health: ratios('health'), list: ratios('list') },
      exported: { ...receiver.received },
      ...(typeof before === 'string' ? { missing: before } : {}),
    };
  } finally {
    probe.close();
    if (typeof before !== 'string') await before.remove();
    await receiver.close();
  }
}

export async function tracingRows(): Promise<string[][]> {
  console.log('tracing: p50 of system.health and workspaces.list, tracing off, on (exporting) and before tracing existed:');
  const result = await benchTracing();
  const { off, on, before } = result.p50;
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? 'n/a' : (a / b).toFixed(3));
  const ms = (value: number | undefined) => (value === undefined ? '-' : `${value.toFixed(2)} ms`);
  // On / off: the median of each process's own ratio (both measured in it), the ratios listed.
  const paired = (values: number[]) => `${median(values).toFixed(3)}  (processes: ${values.map((value) => value.toFixed(3)).join(', ')})`;
  return [
    [
      'tracing on / off, p50 system.health',
      `${paired(result.onOff.health)}; ${ms(on?.health)} / ${ms(off?.health)}; ${result.exported.exports} exports, ${(result.exported.bytes / 1024).toFixed(0)} KiB`,
      `<= ${TRACING_ON_AIM}`,
    ],
    ['tracing on / off, p50 workspaces.list', `${paired(result.onOff.list)}; ${ms(on?.list)} / ${ms(off?.list)}`, `<= ${TRACING_ON_AIM}`],
    ['tracing off / before tracing, p50 system.health', before ? `${ratio(off?.health, before.health)}  (${ms(off?.health)} / ${ms(before.health)})` : `not measured: ${result.missing}`, 'within noise'],
    ['tracing off / before tracing, p50 workspaces.list', before ? `${ratio(off?.list, before.list)}  (${ms(off?.list)} / ${ms(before.list)})` : '', 'within noise'],
  ];
}

if (import.meta.main) printRows([['measure', 'result', 'aim'], ...(await tracingRows())]);

/**
 * What tracing costs (issue 41; docs/observability.md): p50 latency of system.health
 * (`GET /api/v1/health`) and workspaces.list (`GET /api/v1/workspaces`: session, access check, a
 * query), each app in a process of its own on its own embedded database (tracing-app.ts):
 *
 * - two processes of this tree, A and B, each turned on and off between windows: `off` (no
 *   exporter: the SDK not running, as by default) and `on` (the SDK started in it, exporting every
 *   span over OTLP/HTTP, protobuf as by default, to a receiver in this process, sampling
 *   everything);
 * - `before`: a process of the tree just before tracing was added (a git worktree of the parent of
 *   the commit that added src/telemetry/tracing.ts, with its own dependencies), today's baseline.
 *   Left out, saying why, where git cannot make it.
 *
 * One open-loop probe (latency-probe.ts) sends each of two apps' two routes a request every 20 ms,
 * the four a quarter interval apart so that each request has the server to itself. On / off is a
 * crossover: A on and B off, then the other way round (ABBA windows of 3 s), so that both the
 * machine's drift and a process's own speed fall out of sqrt(onA/offB * onB/offA). Off / before:
 * A, then B, tracing off, against the before tree's process. Latencies count from the moment each
 * request was sent: the probe's own timer fires up to a millisecond late, which counted in (as
 * from the due time) added about 0.7 ms to every answer and shrank the ratios. All of that five
 * times with fresh processes; the medians of the five ratios are reported. About 4 minutes. Aims:
 * on/off p50 at most 1.05; off/before within noise (about 1.00 ± 0.05). A measurement, not a test:
 * nothing fails when a figure misses its aim.
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
  /** Tracing on / off, p50 against p50, one per repetition (a crossover of two processes of this tree). */
  onOff: { health: number[]; list: number[] };
  /** Tracing off / the tree before tracing, p50 against p50, one per repetition; empty when `before` is missing. */
  offBefore: { health: number[]; list: number[] };
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

/** The probe's four targets of two apps, a quarter of an interval apart: each request alone on the server. */
function interleaved(first: [string, App], second: [string, App]): ProbeTarget[] {
  const quarter = PROBE_INTERVAL_MS / 4;
  return [
    { ...first[1].targets.health, name: `${first[0]}.health`, offsetMs: 0 },
    { ...second[1].targets.health, name: `${second[0]}.health`, offsetMs: quarter },
    { ...first[1].targets.list, name: `${first[0]}.list`, offsetMs: 2 * quarter },
    { ...second[1].targets.list, name: `${second[0]}.list`, offsetMs: 3 * quarter },
  ];
}

export async function benchTracing({ repetitions = 5, windowMs = 3000 } = {}): Promise<TracingResult> {
  const receiver = await countingReceiver();
  const before = await treeBeforeTracing();
  const probe = startProbe();
  const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'always_on', OTEL_SDK_DISABLED: 'false' };
  const untraced = { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: '' };
  const ratios = { onOff: { health: [] as number[], list: [] as number[] }, offBefore: { health: [] as number[], list: [] as number[] } };
  const pooled = new Map<string, number[]>();
  const measure = async (targets: ProbeTarget[], record: (name: string, latencies: number[]) => void) => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const result = await probe.window(targets, windowMs).result;
    if (result.errors > 0) throw new Error(`${result.errors} requests failed`);
    for (const [name, latencies] of Object.entries(result.fromSent)) record(name, latencies);
  };
  try {
    for (let repetition = 0; repetition < repetitions; repetition++) {
      // Two processes of this tree, A and B, and one of the tree before tracing, C, started in
      // another order each repetition; each in its place as soon as it runs, to be stopped below.
      const apps: App[] = [];
      try {
        const trees: [string, Record<string, string>][] = [[root, traced], [root, traced], ...(typeof before === 'string' ? [] : [[before.dir, untraced] as [string, Record<string, string>]])];
        for (let k = 0; k < trees.length; k++) {
          const index = (repetition + k) % trees.length;
          const [tree, env] = trees[index]!;
          apps[index] = await startApp(tree, env);
        }
        const [a, b, c] = apps as [App, App, App | undefined];
        // Untimed: every app's code optimised before the first window, this tree's both ways.
        await Promise.all([a.trace(true), b.trace(true)]);
        await probe.window(interleaved(['a', a], ['b', b]), 3000).result;
        if (c) await probe.window(interleaved(['c', c], ['b', b]), 2000).result;
        // Latencies by name: `on.a.health`, `off.b.list`, `base.a.health`, `before.list`, ...
        const latencies = new Map<string, number[]>();
        const add = (key: string, values: number[]) => latencies.set(key, [...(latencies.get(key) ?? []), ...values]);
        // A crossover: tracing on in A and off in B, then the other way round (ABBA), both probed
        // interleaved. Interleaved, the machine's drift (the same request's p50 wandered by a
        // third within seconds on these cores) falls on both alike; crossed over, so does a
        // process's own speed (a process of a tree ran up to 7% slower than another of the same
        // tree for its whole life): on/off = sqrt(onA/offB * onB/offA) is tracing's alone.
        for (const aOn of [true, false, false, true]) {
          await Promise.all([a.trace(aOn), b.trace(!aOn)]);
          await measure(interleaved(['a', a], ['b', b]), (name, values) => {
            const [app, target] = name.split('.') as ['a' | 'b', string];
            add(`${(app === 'a') === aOn ? 'on' : 'off'}.${app}.${target}`, values);
          });
        }
        // Off against the tree before tracing: each of A and B, tracing off, interleaved with C.
        // Across processes, so only the repetitions average out a process's own speed.
        if (c) {
          await Promise.all([a.trace(false), b.trace(false)]);
          for (const [name, app] of [
            ['a', a],
            ['b', b],
          ] as const) {
            await measure(interleaved([name, app], ['c', c]), (key, values) => {
              const [which, target] = key.split('.') as [string, string];
              add(which === 'c' ? `before.${target}` : `base.${target}`, values);
            });
          }
        }
        const p50 = (key: string) => percentile(latencies.get(key) ?? [NaN], 50);
        for (const target of ['health', 'list'] as const) {
          ratios.onOff[target].push(Math.sqrt(((p50(`on.a.${target}`) / p50(`off.b.${target}`)) * p50(`on.b.${target}`)) / p50(`off.a.${target}`)));
          if (c) ratios.offBefore[target].push(p50(`base.${target}`) / p50(`before.${target}`));
          for (const variant of ['on', 'off'] as const)
            pooled.set(`${variant}.${target}`, [...(pooled.get(`${variant}.${target}`) ?? []), ...(latencies.get(`${variant}.a.${target}`) ?? []), ...(latencies.get(`${variant}.b.${target}`) ?? [])]);
          if (c) pooled.set(`before.${target}`, [...(pooled.get(`before.${target}`) ?? []), ...(latencies.get(`before.${target}`) ?? [])]);
        }
      } finally {
        await Promise.all(
          // Sparse when a start failed: map skips the places not filled.
          apps.map(async ({ child }) => {
            // One that crashed meanwhile has exited already: no stop to send, no exit to wait for.
            if (child.exitCode !== null || child.signalCode !== null) return;
            const exit = once(child, 'exit');
            child.send('stop' satisfies AppMessage);
            await exit;
          }),
        );
      }
    }
    const p50 = (key: string) => (pooled.has(key) ? percentile(pooled.get(key)!, 50) : undefined);
    const variants: Variant[] = ['off', 'on', ...(typeof before === 'string' ? [] : ['before' as const])];
    return {
      p50: Object.fromEntries(variants.map((variant) => [variant, { health: p50(`${variant}.health`)!, list: p50(`${variant}.list`)! }])),
      onOff: ratios.onOff,
      offBefore: ratios.offBefore,
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
  const ms = (value: number | undefined) => (value === undefined ? '-' : `${value.toFixed(2)} ms`);
  // The median of the repetitions' ratios, each listed.
  const ratios = (values: number[]) => `${median(values).toFixed(3)}  (repetitions: ${values.map((value) => value.toFixed(3)).join(', ')})`;
  return [
    [
      'tracing on / off, p50 system.health',
      `${ratios(result.onOff.health)}; ${ms(on?.health)} / ${ms(off?.health)}; ${result.exported.exports} exports, ${(result.exported.bytes / 1024).toFixed(0)} KiB`,
      `<= ${TRACING_ON_AIM}`,
    ],
    ['tracing on / off, p50 workspaces.list', `${ratios(result.onOff.list)}; ${ms(on?.list)} / ${ms(off?.list)}`, `<= ${TRACING_ON_AIM}`],
    ['tracing off / before tracing, p50 system.health', before ? `${ratios(result.offBefore.health)}; before ${ms(before.health)}` : `not measured: ${result.missing}`, 'within noise'],
    ['tracing off / before tracing, p50 workspaces.list', before ? `${ratios(result.offBefore.list)}; before ${ms(before.list)}` : '', 'within noise'],
  ];
}

if (import.meta.main) printRows([['measure', 'result', 'aim'], ...(await tracingRows())]);

/**
 * API latency while a large document is extracted and indexed. The real app on a loopback port
 * with its worker and the AI service where `serve` runs them (the worker in its own process on a
 * server, inline on the embedded database; the AI service as its own process); an open-loop
 * probe in a child process (latency-probe.ts) sends `GET /healthz` and an authenticated
 * `GET /api/v1/workspaces` (workspaces.list, REST: session lookup, access check, a query) every
 * 20 ms each. First an idle window (the baseline), then the window from jobs.create of a
 * document.index job on a generated 17 MB HTML document (400 pages of markup around a paragraph
 * of prose each, prose.ts: about 210 000 characters of text, 340 chunks) to its `succeeded` event:
 * the upload is done before; the job reads it from storage, the AI service parses it in its
 * extraction thread and embeds its chunks, the worker stores them. Reports p50 and p99 of each
 * request in both windows and the p99 ratio loaded / idle; aim <= 2.
 * A measurement, not a test: nothing fails when a figure misses its aim.
 *   node bench/api-latency.ts [--embedded-only | --real-only]
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Database } from '../src/db/connection.ts';
import { clientFor, createTenant, forkAiService, startDocumentApp, uploadDocument } from './document-app.ts';
import { streamWaiter } from './job-latency.ts';
import type { ProbeMessage, ProbeResult, ProbeTarget } from './latency-probe.ts';
import { runStandalone } from './pg-server.ts';
import { largeHtmlDocument } from './prose.ts';
import { percentile } from './support.ts';

export const API_LATENCY_AIM = 2;
/** The probe's interval: each target gets a request this often. */
export const PROBE_INTERVAL_MS = 20;

interface Window {
  p50: number;
  p99: number;
  requests: number;
}

export interface ApiLatencyResult {
  where: string;
  bytes: number;
  chunks: number;
  jobSeconds: number;
  idleSeconds: number;
  errors: number;
  /** Per target name. */
  idle: Record<string, Window>;
  loaded: Record<string, Window>;
}

export function startProbe() {
  const child = fork(fileURLToPath(new URL('./latency-probe.ts', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return {
    /** Starts a window; the promise resolves with its result once stop() (or maxMs) ends it. */
    window(targets: ProbeTarget[], maxMs: number): { stop(): void; result: Promise<ProbeResult> } {
      const result = once(child, 'message').then(([message]) => message as ProbeResult);
      child.send({ type: 'start', targets, intervalMs: PROBE_INTERVAL_MS, maxMs } satisfies ProbeMessage);
      return { stop: () => child.send({ type: 'stop' } satisfies ProbeMessage), result };
    },
    close: () => child.disconnect(),
  };
}

export const summary = (result: ProbeResult): Record<string, Window> =>
  Object.fromEntries(Object.entries(result.latencies).map(([name, values]) => [name, { p50: percentile(values, 50), p99: percentile(values, 99), requests: values.length }]));

export async function benchApiLatency(db: Database, where: string, { pages = 400, idleMs = 15_000, maxLoadedMs = 300_000 } = {}): Promise<ApiLatencyResult> {
  const ai = await forkAiService();
  const app = await startDocumentApp(db, ai);
  const probe = startProbe();
  const stop = new AbortController();
  try {
    const tenant = await createTenant(db, { name: 'Latency bench' });
    const owner = tenant.users[0]!;
    const client = clientFor(app, owner);
    const waitFor = await streamWaiter(app.url, owner.token, tenant.organizationId, stop.signal, { timeoutMs: 600_000 });
    const targets: ProbeTarget[] = [
      { name: 'GET /healthz', url: `${app.url}/healthz` },
      { name: 'workspaces.list', url: `${app.url}/api/v1/workspaces?organizationId=${tenant.organizationId}`, headers: { authorization: `Bearer ${owner.token}` } },
    ];
    // The document is made and uploaded first: its tens of megabytes of strings and buffers are
    // the bench's own garbage, collected (if at all) in the idle window as much as in the loaded one.
    const html = new TextEncoder().encode(largeHtmlDocument(pages));
    const documentId = await uploadDocument(client, tenant, 'operations-report.html', 'text/html', html);
    // Warm-up: the probe's connections and the app's code paths.
    const warm = probe.window(targets, 2000);
    await warm.result;
    const idle = await probe.window(targets, idleMs).result;

    const loaded = probe.window(targets, maxLoadedMs);
    const started = performance.now();
    const job = await client.jobs.create({ organizationId: tenant.organizationId, kind: 'document.index', documentId });
    const finished = await waitFor(job.id).finally(() => loaded.stop());
    const busy = await loaded.result;
    const done = await client.jobs.get({ id: job.id });
    if (done.status !== 'succeeded') throw new Error(`the indexing job ${done.status}: ${JSON.stringify(done.error)}`);
    const result: ApiLatencyResult = {
      where,
      bytes: html.byteLength,
      chunks: (done.result as { chunks: number }).chunks,
      jobSeconds: (finished - started) / 1000,
      idleSeconds: idle.seconds,
      errors: idle.errors + busy.errors,
      idle: summary(idle),
      loaded: summary(busy),
    };
    for (const { name } of targets) {
      const [before, during] = [result.idle[name]!, result.loaded[name]!];
      console.log(
        `  ${name}: idle p50 ${before.p50.toFixed(1)} p99 ${before.p99.toFixed(1)} ms (${before.requests}); ` +
          `while indexing p50 ${during.p50.toFixed(1)} p99 ${during.p99.toFixed(1)} ms (${during.requests}); max ${Math.max(...busy.latencies[name]!).toFixed(0)} ms`,
      );
    }
    if (process.env.BENCH_VERBOSE) {
      // Each second of the loaded window: the worst latency of each target, and how many of its
      // answers took more than the aim (API_LATENCY_AIM × the idle p99), to place the stalls in the job.
      for (let second = 0; second < busy.seconds; second++) {
        const cells = targets.map(({ name }) => {
          const inSecond = busy.latencies[name]!.filter((_, i) => Math.floor(busy.due[name]![i]! / 1000) === second);
          const over = inSecond.filter((ms) => ms > API_LATENCY_AIM * result.idle[name]!.p99).length;
          return `${Math.max(0, ...inSecond)
            .toFixed(0)
            .padStart(5)} ms (${over} over)`;
        });
        console.log(`    ${String(second).padStart(3)} s: ${cells.join('  ')}`);
      }
    }
    console.log(`  job: ${(html.byteLength / 2 ** 20).toFixed(1)} MiB HTML, ${result.chunks} chunks in ${result.jobSeconds.toFixed(1)} s; ${result.errors} failed probes`);
    return result;
  } finally {
    stop.abort();
    probe.close();
    await app.close();
    await ai.close();
  }
}

/** Rows for bench/index.ts's table. */
export function apiLatencyRows(result: ApiLatencyResult | { skipped: string; where: string }): string[][] {
  if ('skipped' in result) return [[`API p99 while indexing, ${result.where}`, `skipped: ${result.skipped}`, '']];
  return Object.keys(result.idle).map((name, i) => {
    const [idle, loaded] = [result.idle[name]!, result.loaded[name]!];
    const label =
      i === 0 ? `${name} p99 while indexing / idle (${result.where}; ${(result.bytes / 2 ** 20).toFixed(0)} MiB HTML, ${result.chunks} chunks, ${result.jobSeconds.toFixed(0)} s)` : `  ${name} p99, same`;
    return [label, `${(loaded.p99 / idle.p99).toFixed(2)}  (${loaded.p99.toFixed(1)} / ${idle.p99.toFixed(1)} ms; p50 ${loaded.p50.toFixed(1)} / ${idle.p50.toFixed(1)})`, `<= ${API_LATENCY_AIM}`];
  });
}

if (import.meta.main) {
  await runStandalone('API latency while indexing', 'bench_api_latency', {
    embedded: async (db) => apiLatencyRows(await benchApiLatency(db, 'PGlite')),
    real: async (db) => apiLatencyRows(await benchApiLatency(db, 'PostgreSQL 15')),
    skipped: (reason) => apiLatencyRows({ skipped: reason, where: 'PostgreSQL 15' }),
  });
}

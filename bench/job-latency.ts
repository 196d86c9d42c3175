/**
 * How long a client waits for a cheap job: from calling jobs.create (RPC over HTTP, through the
 * real app with its inline worker, as `serve` runs it) to the job's `succeeded` event on
 * jobs.stream. The kind is text.embed of one short text with the local provider: the cheapest real
 * job (one embeddings call to the companion AI service, on loopback), so the figure is almost all
 * queue and bookkeeping: the create transaction, the worker's wake-up and fetch, the run's state
 * changes and their events, and the stream's delivery. Jobs go one at a time (each waits for the
 * previous one), after a few unmeasured ones. p50 and p95; aim p95 <= 250 ms.
 * A measurement, not a test: nothing fails when a figure misses its aim.
 *   node bench/job-latency.ts
 */
import { createClient } from '../clients/typescript/src/index.ts';
import { loadConfig } from '../src/config.ts';
import { startAiService } from '../src/ai-service/server.ts';
import { createSession } from '../src/auth/sessions.ts';
import type { Database } from '../src/db/connection.ts';
import { newId } from '../src/ids.ts';
import { jobStreamProcedures } from '../src/jobs/stream.ts';
import { createLogger } from '../src/logger.ts';
import { streamHandlers } from '../src/composition/handlers.ts';
import { runStandalone } from './pg-server.ts';
import { benchEnv, percentile, startFullApp } from './support.ts';

export const LATENCY_AIM_MS = 250;

export interface LatencyResult {
  where: string;
  jobs: number;
  p50: number;
  p95: number;
  /** The jobs.create answer alone. */
  createP50: number;
  /** How the end was seen: the stream's event, or jobs.get polled every 5 ms when the stream did not work. */
  via: 'jobs.stream' | 'jobs.get polling';
  /** Why the stream was not used, or how it was wired. */
  note: string;
}

type Client = ReturnType<typeof createClient>;

export async function benchJobLatency(db: Database, where: string, { jobs = 100, warmup = 5 } = {}): Promise<LatencyResult> {
  const ai = await startAiService({ settings: loadConfig({}).ai, host: '127.0.0.1', port: 0, logger: createLogger('silent') });
  // src/procedures.ts may not register jobs.stream yet; then the app gets the real handler the way tests pass it.
  const registered = 'jobs.stream' in streamHandlers;
  const app = await startFullApp(db, registered ? undefined : { streams: jobStreamProcedures }, loadConfig({ ...benchEnv, AI_URL: ai.url, WORKER: 'inline' }));
  const stop = new AbortController();
  try {
    const userId = newId('usr');
    const organizationId = newId('org');
    await db.sql`insert into users (id, email, email_verified, name) values (${userId}, ${`${userId}@example.com`}, true, 'Bench')`;
    await db.sql`insert into organizations (id, name, slug) values (${organizationId}, 'Latency bench', ${organizationId.replace('_', '-')})`;
    await db.sql`insert into members (id, organization_id, user_id, role) values (${newId('mem')}, ${organizationId}, ${userId}, 'owner')`;
    const { token } = await createSession(db.sql, { userId, now: new Date() });
    const client = createClient({ baseUrl: app.url, token });

    let note = registered ? 'stream handler as registered' : 'stream handler passed in (src/procedures.ts does not register jobs.stream yet)';
    let waitFor: (id: string) => Promise<number>;
    try {
      waitFor = await streamWaiter(app.url, token, organizationId, stop.signal);
    } catch (error) {
      note = `jobs.stream did not open (${(error as Error).message}); polled jobs.get every 5 ms instead`;
      waitFor = (id) => pollWaiter(client, id);
    }
    const latencies: number[] = [];
    const creates: number[] = [];
    for (let i = 0; i < warmup + jobs; i++) {
      const started = performance.now();
      const job = await client.jobs.create({ organizationId, kind: 'text.embed', input: { texts: [`A short text to embed, number ${i}.`] } });
      const created = performance.now();
      const finished = await waitFor(job.id);
      if (i >= warmup) {
        latencies.push(finished - started);
        creates.push(created - started);
      }
    }
    console.log(`  ${note}`);
    return {
      where,
      jobs,
      p50: percentile(latencies, 50),
      p95: percentile(latencies, 95),
      createP50: percentile(creates, 50),
      via: note.startsWith('jobs.stream did not') ? 'jobs.get polling' : 'jobs.stream',
      note,
    };
  } finally {
    stop.abort();
    await app.close();
    await ai.close();
  }
}

/**
 * Follows the organization's stream; answers a function that resolves when a job's `succeeded`
 * (or `failed`) event arrived, with that moment. The stream is read over REST (GET), parsed here:
 * an RPC stream (the generated client's POST) is not ended by the server when the client goes
 * away (src/http/streams.ts listens for the request's 'close', which a POST whose body was
 * already read has emitted before), so its timers would keep this process alive for 15 minutes.
 */
export async function streamWaiter(baseUrl: string, token: string, organizationId: string, signal: AbortSignal, { timeoutMs = 30_000 } = {}): Promise<(id: string) => Promise<number>> {
  const seen = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  const response = await fetch(`${baseUrl}/api/v1/organizations/${organizationId}/jobs/stream`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal });
  if (response.status !== 200 || !response.body) throw new Error(`it answered ${response.status}`);
  let ready!: () => void;
  const opened = new Promise<void>((resolve) => (ready = resolve));
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(bytes, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const fields = new Map(
            buffer
              .slice(0, end)
              .split('\n')
              .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()] as const),
          );
          buffer = buffer.slice(end + 2);
          if (fields.get('event') === 'ready') ready();
          if (fields.get('event') !== 'job') continue;
          const job = JSON.parse(fields.get('data')!) as { id: string; status: string };
          if (job.status !== 'succeeded' && job.status !== 'failed') continue;
          const at = performance.now();
          seen.set(job.id, at);
          waiting.get(job.id)?.(at);
        }
      }
    } catch {
      // Aborted at the end of the bench.
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([opened, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no ready event within 5 s')), 5000)))]).finally(() => clearTimeout(timer));
  return (id) =>
    new Promise<number>((resolve, reject) => {
      const at = seen.get(id);
      if (at !== undefined) return resolve(at);
      const timeout = setTimeout(() => reject(new Error(`no succeeded event for ${id} within ${timeoutMs / 1000} s`)), timeoutMs);
      waiting.set(id, (when) => {
        clearTimeout(timeout);
        resolve(when);
      });
    });
}

async function pollWaiter(client: Client, id: string): Promise<number> {
  const deadline = performance.now() + 30_000;
  for (;;) {
    const job = await client.jobs.get({ id });
    if (job.status === 'succeeded' || job.status === 'failed') return performance.now();
    if (performance.now() > deadline) throw new Error(`job ${id} still ${job.status} after 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Rows for bench/index.ts's table. */
export function latencyRows(result: LatencyResult | { skipped: string; where: string }): string[][] {
  if ('skipped' in result) return [[`job create → succeeded, ${result.where}`, `skipped: ${result.skipped}`, '']];
  return [
    [
      `job create → succeeded p95 (${result.where}; text.embed, local; via ${result.via})`,
      `${result.p95.toFixed(0)} ms  (p50 ${result.p50.toFixed(0)}; create answer p50 ${result.createP50.toFixed(0)} ms; ${result.jobs} jobs)`,
      `<= ${LATENCY_AIM_MS} ms`,
    ],
  ];
}

if (import.meta.main) {
  await runStandalone('job create → succeeded', 'bench_latency', {
    embedded: async (db) => latencyRows(await benchJobLatency(db, 'PGlite')),
    real: async (db) => latencyRows(await benchJobLatency(db, 'PostgreSQL 15')),
    skipped: (reason) => latencyRows({ skipped: reason, where: 'PostgreSQL 15' }),
  });
}

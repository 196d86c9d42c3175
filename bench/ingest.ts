/**
 * NFCorpus ingested end to end, from the first upload to the last document searchable (issue 38,
 * item 4), both ways a client can, each into a workspace of its own organization:
 * - per-document: each document uploaded (createUpload, the signed PUT, complete), then a
 *   document.index job for it (which extracts it first), IN_FLIGHT documents at once; a jobs.create
 *   refused by the organization's cap on queued jobs (429) waits its Retry-After and asks again
 *   (the 429s are counted). Searchable: the last job's `succeeded` event on jobs.stream.
 * - workspace: every document uploaded (the same way, IN_FLIGHT at once), then one workspace.index
 *   job for the workspace, followed to its `succeeded` event on jobs.stream (its `progress` printed
 *   as it goes).
 * The app on a loopback port with its worker where `serve` runs it and the AI service as its own
 * process (document-app.ts). Against each, the bare model on the chunks that ingest stored (read
 * back from document_chunks, the documents' current generation) as issue 38 defines it: the model
 * in this process, one inference of two onnxruntime threads (support.ts bareModel), sent 16 texts
 * at a time longest first (the requests the job sends, src/jobs/embed-chunks.ts), one after the
 * other, once the ingest is over.
 * Ratio ingest / bare chunks/s; aims >= 0.6 per document, >= 0.8 for workspace.index.
 * Also during each ingest: the p99 of GET /healthz and workspaces.list (the open-loop probe of
 * api-latency.ts) against the same probe idle just before, aim <= 2; and another organization's
 * tiny document.index job every 5 s, its wait from jobs.create to `succeeded`: p50 and max, aim
 * within 10 s. The ways run one after the other on the same database (per-document first).
 * A measurement, not a test: nothing fails when a figure misses its aim. The collection is
 * RETRIEVAL_COLLECTION or ../shared/datasets/nfcorpus (bench/retrieval/dataset.ts; that copy holds
 * 3 162 documents, 5 552 chunks); without it the run says `skipped:`. `--documents N` takes its
 * first N documents (default all; bench/index.ts takes 500).
 *   node bench/ingest.ts [--documents N] [--way per-document|workspace|both] [--embedded-only | --real-only]
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiClientError } from '../clients/typescript/src/index.ts';
import type { QueuedEmbedder } from '../src/ai-service/embedder.ts';
import type { Database } from '../src/db/connection.ts';
import { startProbe, summary } from './api-latency.ts';
import { clientFor, createTenant, forkAiService, startDocumentApp, uploadDocument, type Client, type Tenant } from './document-app.ts';
import { streamWaiter } from './job-latency.ts';
import type { ProbeResult, ProbeTarget } from './latency-probe.ts';
import { runStandalone } from './pg-server.ts';
import { collectionDir, loadCollection, type Document as CorpusDocument } from './retrieval/dataset.ts';
import { bareModel, percentile } from './support.ts';

export type IngestWay = 'per-document' | 'workspace';
export const INGEST_WAYS: readonly IngestWay[] = ['per-document', 'workspace'];
export const INGEST_AIMS: Record<IngestWay, number> = { 'per-document': 0.6, workspace: 0.8 };
export const INGEST_LATENCY_AIM = 2;
export const NEIGHBOUR_AIM_MS = 10_000;

/** Documents in flight at once (upload, and for per-document its jobs.create). */
const IN_FLIGHT = 6;
/** Texts per bare embed call: what the job sends per embeddings request (EMBED_BATCH). */
const BARE_BATCH = 16;
const NEIGHBOUR_EVERY_MS = 5_000;
/** Longer than any ingest: the probe's loaded window and a job's wait end when the ingest does. */
const LONG_MS = 4 * 3600_000;

type Windows = ReturnType<typeof summary>;

export interface Neighbour {
  jobs: number;
  /** Jobs that failed or whose end was not seen. */
  failed: number;
  p50Ms: number;
  maxMs: number;
}

export interface WayResult {
  way: IngestWay;
  documents: number;
  /** Chunks stored in the workspace (the documents' current generation). */
  chunks: number;
  /** Documents not indexed (failed jobs; workspace.index: its `failed`). */
  failed: number;
  /** First upload to the last one complete. */
  uploadSeconds: number;
  /** First upload to the last document searchable. */
  ingestSeconds: number;
  bareSeconds: number;
  ingestChunksPerSecond: number;
  bareChunksPerSecond: number;
  ratio: number;
  /** per-document: jobs.create's 429 answers, and the seconds their Retry-After said to wait. */
  tooManyRequests: number;
  retryAfterSeconds: number;
  idle: Windows;
  loaded: Windows;
  probeErrors: number;
  neighbour: Neighbour;
}

export type WayOutcome = WayResult | { way: IngestWay; skipped: string };

export interface IngestResult {
  where: string;
  documents: number;
  ways: WayOutcome[];
}

interface WorkspaceIndexResult {
  documents: number;
  indexed: number;
  unchanged: number;
  gone: number;
  failed: number;
  chunks: number;
  model: string;
  failures: { documentId: string; message: string }[];
}

const encoder = new TextEncoder();
const seconds = (ms: number) => ms / 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** As bench/retrieval/run.ts uploads a document: title and text joined by a blank line. */
const bodyOf = (document: CorpusDocument) => encoder.encode(document.title ? `${document.title}\n\n${document.text}` : document.text);

/** Runs `work` over `items` with at most `limit` at once, in order of start. */
async function pooled<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/**
 * streamWaiter for longer than one stream lives (jobs.stream ends each connection after 15
 * minutes, src/jobs/stream.ts): a new stream every RENEW_MS, and every wait not answered yet asked
 * of it too. Each stream's own waits time out (2 × RENEW_MS) before the stream ends and after the
 * next one took them over, so none is left ticking once its job has ended.
 */
const RENEW_MS = 4 * 60_000;
type Waiter = (id: string) => Promise<number>;
async function followJobs(baseUrl: string, token: string, organizationId: string, signal: AbortSignal): Promise<(id: string) => Promise<number>> {
  const pending = new Map<string, (at: number) => void>();
  const ask = (waitFor: Waiter, id: string) =>
    void waitFor(id).then(
      (at) => pending.get(id)?.(at),
      () => undefined,
    );
  const open = () => streamWaiter(baseUrl, token, organizationId, signal, { timeoutMs: 2 * RENEW_MS });
  let newest = await open();
  const renew = setInterval(
    () =>
      void open().then(
        (next) => {
          newest = next;
          for (const id of pending.keys()) ask(next, id);
        },
        () => undefined,
      ),
    RENEW_MS,
  );
  signal.addEventListener('abort', () => clearInterval(renew), { once: true });
  return (id) =>
    new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`no end event for job ${id} within ${seconds(LONG_MS)} s`));
      }, LONG_MS);
      pending.set(id, (at) => {
        pending.delete(id);
        clearTimeout(timer);
        resolve(at);
      });
      ask(newest, id);
    });
}

/** Another organization's tiny document.index job every NEIGHBOUR_EVERY_MS (open loop), until stop(). */
function startNeighbour(client: Client, tenant: Tenant, waitFor: Waiter, label: string) {
  const waits: number[] = [];
  let failed = 0;
  let sent = 0;
  const running = new Set<Promise<void>>();
  const send = () => {
    const n = ++sent;
    const run = (async () => {
      const text = `Note ${n} of the neighbour (${label}): the quarterly figures are in, revenue grew and churn fell.`;
      const documentId = await uploadDocument(client, tenant, `note-${label}-${n}.txt`, 'text/plain', encoder.encode(text));
      const started = performance.now();
      const job = await client.jobs.create({ organizationId: tenant.organizationId, kind: 'document.index', documentId });
      const ended = await waitFor(job.id);
      if ((await client.jobs.get({ id: job.id })).status === 'succeeded') waits.push(ended - started);
      else failed++;
    })().catch((error: unknown) => {
      failed++;
      console.log(`  the neighbour's job ${n}: ${(error as Error).message}`);
    });
    running.add(run);
    void run.finally(() => running.delete(run));
  };
  send();
  const timer = setInterval(send, NEIGHBOUR_EVERY_MS);
  return {
    async stop(): Promise<Neighbour> {
      clearInterval(timer);
      await Promise.all(running);
      return { jobs: waits.length + failed, failed, p50Ms: waits.length ? percentile(waits, 50) : NaN, maxMs: waits.length ? Math.max(...waits) : NaN };
    },
  };
}

/** The chunks the ingest stored in `workspaceId`: the documents' current generation. */
async function storedChunks(db: Database, workspaceId: string): Promise<string[]> {
  const rows = await db.sql<{ text: string }[]>`
    select c.text from document_chunks c join documents d on d.id = c.document_id and c.generation = d.chunk_generation
    where c.workspace_id = ${workspaceId}`;
  return rows.map((row) => row.text);
}

/** The bare model on `texts`: longest first, BARE_BATCH at a time, one call after the other. */
async function embedBare(bare: QueuedEmbedder, texts: string[]): Promise<number> {
  const sorted = [...texts].sort((a, b) => b.length - a.length);
  const started = performance.now();
  for (let i = 0; i < sorted.length; i += BARE_BATCH) await bare.embed(sorted.slice(i, i + BARE_BATCH));
  return performance.now() - started;
}

interface Ingested {
  uploadSeconds: number;
  ingestSeconds: number;
  failed: number;
  tooManyRequests: number;
  retryAfterSeconds: number;
}

/** (a) Upload, then jobs.create (429: wait Retry-After, ask again), IN_FLIGHT documents at once; until every job ended. */
async function ingestPerDocument(db: Database, client: Client, tenant: Tenant, corpus: readonly CorpusDocument[], waitFor: Waiter): Promise<Ingested> {
  const started = performance.now();
  let lastUpload = started;
  let tooManyRequests = 0;
  let retryAfterSeconds = 0;
  let settled = 0;
  const ends: Promise<number>[] = [];
  await pooled(corpus, IN_FLIGHT, async (document) => {
    const documentId = await uploadDocument(client, tenant, `${document.id}.txt`, 'text/plain', bodyOf(document));
    lastUpload = performance.now();
    for (;;) {
      try {
        const job = await client.jobs.create({ organizationId: tenant.organizationId, kind: 'document.index', documentId });
        const end = waitFor(job.id);
        end.then(
          () => {
            if (++settled % 500 === 0) console.log(`    ${settled} jobs ended after ${seconds(performance.now() - started).toFixed(0)} s`);
          },
          () => undefined,
        );
        ends.push(end);
        return;
      } catch (error) {
        if ((error as ApiClientError).status !== 429) throw error;
        const wait = (error as ApiClientError).retryAfterSeconds ?? 1;
        tooManyRequests++;
        retryAfterSeconds += wait;
        await sleep(wait * 1000);
      }
    }
  });
  const ended = Math.max(...(await Promise.all(ends)));
  const [row] = await db.sql<{ failed: number }[]>`
    select count(*)::int as failed from jobs where organization_id = ${tenant.organizationId} and status <> 'succeeded'`;
  return { uploadSeconds: seconds(lastUpload - started), ingestSeconds: seconds(ended - started), failed: row!.failed, tooManyRequests, retryAfterSeconds };
}

/** (b) Every document uploaded, then one workspace.index job, followed to its end. */
async function ingestWorkspace(client: Client, tenant: Tenant, corpus: readonly CorpusDocument[], waitFor: Waiter): Promise<Ingested> {
  const started = performance.now();
  await pooled(corpus, IN_FLIGHT, async (document) => void (await uploadDocument(client, tenant, `${document.id}.txt`, 'text/plain', bodyOf(document))));
  const uploaded = performance.now();
  console.log(`    uploaded ${corpus.length} documents in ${seconds(uploaded - started).toFixed(1)} s`);
  const job = await client.jobs.create({ organizationId: tenant.organizationId, kind: 'workspace.index', workspaceId: tenant.workspaceId }).catch((error: unknown) => {
    const { status, message } = error as ApiClientError;
    throw status === 400 ? new Error(`jobs.create refused workspace.index (400: ${message})`) : error;
  });
  const progress = setInterval(
    () =>
      void client.jobs.get({ id: job.id }).then(
        ({ progress: p }) => p && console.log(`    progress: ${p.done} of ${p.documents} documents done, ${p.failed} failed, after ${seconds(performance.now() - started).toFixed(0)} s`),
        () => undefined,
      ),
    30_000,
  );
  const ended = await waitFor(job.id).finally(() => clearInterval(progress));
  const done = await client.jobs.get({ id: job.id });
  if (done.status !== 'succeeded') throw new Error(`the workspace.index job ${done.status}: ${JSON.stringify(done.error)}`);
  const result = done.result as WorkspaceIndexResult;
  console.log(
    `    workspace.index: ${result.documents} documents, ${result.indexed} indexed, ${result.unchanged} unchanged, ${result.gone} gone, ${result.failed} failed, ${result.chunks} chunks (${result.model})` +
      (result.failures.length ? `; first failure: ${JSON.stringify(result.failures[0])}` : ''),
  );
  return { uploadSeconds: seconds(uploaded - started), ingestSeconds: seconds(ended - started), failed: result.failed, tooManyRequests: 0, retryAfterSeconds: 0 };
}

export async function benchIngest(
  db: Database,
  where: string,
  { documents = Infinity, ways = INGEST_WAYS, idleMs = 15_000 }: { documents?: number; ways?: readonly IngestWay[]; idleMs?: number } = {},
): Promise<IngestResult | { skipped: string; where: string }> {
  const dir = collectionDir();
  if (!existsSync(join(dir, 'corpus.jsonl'))) return { where, skipped: `no collection at ${dir} (see docs/benchmarks.md)` };
  const corpus = loadCollection(dir).documents.slice(0, documents);
  console.log(`  ${corpus.length} NFCorpus documents each way (${dir})`);
  const ai = await forkAiService();
  const app = await startDocumentApp(db, ai);
  const bare = bareModel();
  const probe = startProbe();
  const stop = new AbortController();
  try {
    const neighbour = await createTenant(db, { name: 'Ingest bench neighbour' });
    const neighbourOwner = neighbour.users[0]!;
    const neighbourClient = clientFor(app, neighbourOwner);
    const neighbourWait = await followJobs(app.url, neighbourOwner.token, neighbour.organizationId, stop.signal);
    const targets: ProbeTarget[] = [
      { name: 'GET /healthz', url: `${app.url}/healthz` },
      { name: 'workspaces.list', url: `${app.url}/api/v1/workspaces?organizationId=${neighbour.organizationId}`, headers: { authorization: `Bearer ${neighbourOwner.token}` } },
    ];
    // Warm-up: the probe's connections, the app's and the service's code paths, the bare model's first batches.
    const warm = startNeighbour(neighbourClient, neighbour, neighbourWait, 'warm-up');
    await Promise.all([probe.window(targets, 2000).result, warm.stop(), bare.embed(['A warm-up text for the model.', 'Another, a little longer than the first one.'])]);

    const outcomes: WayOutcome[] = [];
    for (const way of ways) {
      console.log(`  ${way === 'per-document' ? '(a) a document.index job per document' : '(b) one workspace.index job'}:`);
      try {
        const tenant = await createTenant(db, { name: `Ingest bench, ${way}` });
        const owner = tenant.users[0]!;
        const client = clientFor(app, owner);
        const waitFor = await followJobs(app.url, owner.token, tenant.organizationId, stop.signal);
        const idle = await probe.window(targets, idleMs).result;
        const loaded = probe.window(targets, LONG_MS);
        const neighbours = startNeighbour(neighbourClient, neighbour, neighbourWait, way);
        let ingested: Ingested;
        let neighbourWaits: Neighbour;
        let busy: ProbeResult;
        try {
          ingested = way === 'per-document' ? await ingestPerDocument(db, client, tenant, corpus, waitFor) : await ingestWorkspace(client, tenant, corpus, waitFor);
        } finally {
          // Whatever happened: the probe's window is answered before the next one starts or the probe closes.
          loaded.stop();
          neighbourWaits = await neighbours.stop();
          busy = await loaded.result;
        }
        const texts = await storedChunks(db, tenant.workspaceId);
        const bareMs = await embedBare(bare, texts);
        const result: WayResult = {
          way,
          documents: corpus.length,
          chunks: texts.length,
          ...ingested,
          bareSeconds: seconds(bareMs),
          ingestChunksPerSecond: texts.length / ingested.ingestSeconds,
          bareChunksPerSecond: texts.length / seconds(bareMs),
          ratio: texts.length / ingested.ingestSeconds / (texts.length / seconds(bareMs)),
          idle: summary(idle),
          loaded: summary(busy),
          probeErrors: idle.errors + busy.errors,
          neighbour: neighbourWaits,
        };
        printWay(result, busy.latencies);
        outcomes.push(result);
      } catch (error) {
        console.log(`    failed: ${(error as Error).stack ?? String(error)}`);
        outcomes.push({ way, skipped: `failed: ${(error as Error).message}` });
      }
    }
    return { where, documents: corpus.length, ways: outcomes };
  } finally {
    stop.abort();
    probe.close();
    await app.close();
    await bare.close();
    await ai.close();
  }
}

function printWay(result: WayResult, latencies: Record<string, number[]>): void {
  console.log(
    `    ${result.documents} documents uploaded in ${result.uploadSeconds.toFixed(1)} s, searchable after ${result.ingestSeconds.toFixed(1)} s: ` +
      `${result.chunks} chunks (${result.ingestChunksPerSecond.toFixed(1)} chunks/s), ${result.failed} failed` +
      (result.way === 'per-document' ? `; jobs.create answered 429 ${result.tooManyRequests} times (Retry-After ${result.retryAfterSeconds} s in all)` : ''),
  );
  console.log(`    bare model on the same chunks: ${result.bareSeconds.toFixed(1)} s (${result.bareChunksPerSecond.toFixed(1)} chunks/s); ratio ${result.ratio.toFixed(2)}`);
  for (const [name, idle] of Object.entries(result.idle)) {
    const loaded = result.loaded[name]!;
    console.log(
      `    ${name}: idle p50 ${idle.p50.toFixed(1)} p99 ${idle.p99.toFixed(1)} ms (${idle.requests}); ` +
        `while ingesting p50 ${loaded.p50.toFixed(1)} p99 ${loaded.p99.toFixed(1)} ms (${loaded.requests}); max ${Math.max(...latencies[name]!).toFixed(0)} ms`,
    );
  }
  const { neighbour } = result;
  console.log(
    `    another organization's document.index: ${neighbour.jobs} jobs, create → succeeded p50 ${seconds(neighbour.p50Ms).toFixed(2)} s, max ${seconds(neighbour.maxMs).toFixed(2)} s` +
      `; ${neighbour.failed} failed; ${result.probeErrors} failed probes`,
  );
}

/** Rows for bench/index.ts's table. */
export function ingestRows(result: IngestResult | { skipped: string; where: string }): string[][] {
  if ('skipped' in result) return [[`NFCorpus ingest, ${result.where}`, `skipped: ${result.skipped}`, '']];
  return result.ways.flatMap((way) => {
    const how = way.way === 'per-document' ? 'a document.index job per document' : 'one workspace.index job';
    if ('skipped' in way) return [[`ingest chunks/s, ${how} (${result.where})`, `skipped: ${way.skipped}`, '']];
    const { neighbour } = way;
    return [
      [
        `ingest chunks/s, ${how} / bare model (${result.where}; ${way.documents} NFCorpus documents, ${way.chunks} chunks, upload to searchable)`,
        `${way.ratio.toFixed(2)}  (${way.ingestChunksPerSecond.toFixed(1)} / ${way.bareChunksPerSecond.toFixed(1)} chunks/s; ${way.ingestSeconds.toFixed(0)} / ${way.bareSeconds.toFixed(0)} s` +
          `${way.failed ? `; ${way.failed} failed` : ''}${way.way === 'per-document' ? `; ${way.tooManyRequests} × 429` : ''})`,
        `>= ${INGEST_AIMS[way.way]}`,
      ],
      ...Object.keys(way.idle).map((name) => {
        const [idle, loaded] = [way.idle[name]!, way.loaded[name]!];
        return [`  ${name} p99 while ingesting / idle`, `${(loaded.p99 / idle.p99).toFixed(2)}  (${loaded.p99.toFixed(1)} / ${idle.p99.toFixed(1)} ms)`, `<= ${INGEST_LATENCY_AIM}`];
      }),
      [
        `  another organization's document.index, create → succeeded, max`,
        `${seconds(neighbour.maxMs).toFixed(1)} s  (p50 ${seconds(neighbour.p50Ms).toFixed(1)} s; ${neighbour.jobs} jobs${neighbour.failed ? `, ${neighbour.failed} failed` : ''})`,
        `<= ${seconds(NEIGHBOUR_AIM_MS)} s`,
      ],
    ];
  });
}

if (import.meta.main) {
  const option = (name: string) => {
    const i = process.argv.indexOf(name);
    return i < 0 ? undefined : process.argv[i + 1];
  };
  const documents = Number(option('--documents') ?? Infinity);
  if (!(documents > 0)) throw new Error(`--documents must be a positive number, not ${option('--documents')}`);
  const way = option('--way') ?? 'both';
  if (way !== 'both' && !INGEST_WAYS.includes(way as IngestWay)) throw new Error(`--way must be per-document, workspace or both, not ${way}`);
  const options = { documents, ways: way === 'both' ? INGEST_WAYS : [way as IngestWay] };
  await runStandalone('NFCorpus ingest', 'bench_ingest', {
    embedded: async (db) => ingestRows(await benchIngest(db, 'PGlite', options)),
    real: async (db) => ingestRows(await benchIngest(db, 'PostgreSQL 15', options)),
    skipped: (reason) => ingestRows({ skipped: reason, where: 'PostgreSQL 15' }),
  });
}

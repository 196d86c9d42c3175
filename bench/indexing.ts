/**
 * Indexing throughput against the bare model: chunks per second through a real document.index
 * job, against the same chunks embedded by the same model called directly, in one process.
 *
 * - Job: the real app on a loopback port with its worker where `serve` runs it (startDocumentApp), the AI
 *   service as its own process (`main.ts ai`, as `serve` runs it, with an API key). Each round
 *   uploads the document afresh (createUpload, the signed PUT, complete: not timed) so the job
 *   extracts it, then times jobs.create to the job's `succeeded` event on jobs.stream: the queue,
 *   the storage read, `POST /v1/extract`, chunkText, `POST /v1/embeddings` (the job's requests:
 *   64 texts, longest first, two in flight; src/jobs/embed-chunks.ts), the HTTP and JSON of 384
 *   numbers per chunk both ways, and replaceChunks (HNSW insertions included).
 * - Bare: createEmbedder (the service's own embedder: the model in a worker thread, with the
 *   threads, batch size and niceness the service would use) in this process, on the chunks the
 *   job stored (chunkText of the document's extracted text), all in one call: the model's best
 *   case, batches of texts of one length one after the other with nothing in between.
 *   bench/index.ts also compares the job with the best setting of bench/embedder-sweep.ts.
 * The ratio job / bare (chunks/s) says what the whole pipeline costs on top of the model; aim
 * >= 0.8. The document is generated English prose (prose.ts) of 266 chunks: about 13 s of
 * model time on 2 cores. After a warm-up of each side on a smaller document, three rounds of job
 * then bare; medians (the ratio: of the rounds' ratios, so a busy moment moves both sides).
 * A measurement, not a test: nothing fails when a figure misses its aim.
 *   node bench/indexing.ts [--embedded-only | --real-only]
 */
import { createEmbedder } from '../src/ai-service/embedder.ts';
import { loadConfig } from '../src/config.ts';
import type { Database } from '../src/db/connection.ts';
import { chunkText } from '../src/jobs/chunking.ts';
import { clientFor, createTenant, forkAiService, startDocumentApp, uploadDocument } from './document-app.ts';
import { streamWaiter } from './job-latency.ts';
import { runStandalone } from './pg-server.ts';
import { proseDocument } from './prose.ts';
import { benchEnv, logger, median } from './support.ts';

export const INDEXING_AIM = 0.8;

export interface IndexingResult {
  where: string;
  bytes: number;
  chunks: number;
  rounds: number;
  /** Medians over the rounds. */
  jobMs: number;
  bareMs: number;
  jobChunksPerSecond: number;
  bareChunksPerSecond: number;
  /** Median of the rounds' job chunks/s / bare chunks/s. */
  ratio: number;
}

export async function benchIndexing(db: Database, where: string, { bytes = 160_000, rounds = 3, warmupBytes = 40_000 } = {}): Promise<IndexingResult> {
  const ai = await forkAiService();
  const app = await startDocumentApp(db, ai);
  const bare = createEmbedder(loadConfig(benchEnv).ai, logger);
  const stop = new AbortController();
  try {
    const tenant = await createTenant(db, { name: 'Indexing bench' });
    const owner = tenant.users[0]!;
    const client = clientFor(app, owner);
    const waitFor = await streamWaiter(app.url, owner.token, tenant.organizationId, stop.signal, { timeoutMs: 600_000 });
    const source = new TextEncoder().encode(proseDocument(bytes));
    const index = async (name: string, content: Uint8Array) => {
      const documentId = await uploadDocument(client, tenant, name, 'text/markdown', content);
      const started = performance.now();
      const job = await client.jobs.create({ organizationId: tenant.organizationId, kind: 'document.index', documentId });
      const finished = await waitFor(job.id);
      const done = await client.jobs.get({ id: job.id });
      if (done.status !== 'succeeded') throw new Error(`the indexing job ${done.status}: ${JSON.stringify(done.error)}`);
      return { documentId, ms: finished - started, chunks: (done.result as { chunks: number }).chunks };
    };
    const embedBare = async (chunks: string[]) => {
      const started = performance.now();
      await bare.embed(chunks);
      return performance.now() - started;
    };

    // Warm-up: the app's and the service's code paths, the model's first batches on both sides.
    const warm = await index('warm-up.md', new TextEncoder().encode(proseDocument(warmupBytes, 7)));
    await embedBare(chunkText((await client.documents.text({ id: warm.documentId }))!.text));

    const runs: { jobMs: number; bareMs: number; chunks: number }[] = [];
    for (let round = 1; round <= rounds; round++) {
      const job = await index(`report-${round}.md`, source);
      // The chunks the job stored: chunkText of the text it extracted and saved.
      const chunks = chunkText((await client.documents.text({ id: job.documentId }))!.text);
      if (chunks.length !== job.chunks) throw new Error(`the job stored ${job.chunks} chunks, chunkText gives ${chunks.length}`);
      const bareMs = await embedBare(chunks);
      runs.push({ jobMs: job.ms, bareMs, chunks: chunks.length });
      console.log(
        `  round ${round}: ${chunks.length} chunks; job ${(job.ms / 1000).toFixed(2)} s (${(chunks.length / (job.ms / 1000)).toFixed(1)} chunks/s), ` +
          `bare model ${(bareMs / 1000).toFixed(2)} s (${(chunks.length / (bareMs / 1000)).toFixed(1)} chunks/s)`,
      );
    }
    const chunks = runs[0]!.chunks;
    return {
      where,
      bytes: source.byteLength,
      chunks,
      rounds,
      jobMs: median(runs.map((run) => run.jobMs)),
      bareMs: median(runs.map((run) => run.bareMs)),
      jobChunksPerSecond: median(runs.map((run) => run.chunks / (run.jobMs / 1000))),
      bareChunksPerSecond: median(runs.map((run) => run.chunks / (run.bareMs / 1000))),
      ratio: median(runs.map((run) => run.bareMs / run.jobMs)),
    };
  } finally {
    stop.abort();
    await app.close();
    await bare.close();
    await ai.close();
  }
}

/**
 * Rows for bench/index.ts's table: the job against the bare model at the service's settings and,
 * when given, against the best setting bench/embedder-sweep.ts measured in the same run.
 */
export function indexingRows(result: IndexingResult | { skipped: string; where: string }, bestChunksPerSecond?: number): string[][] {
  if ('skipped' in result) return [[`indexing, ${result.where}`, `skipped: ${result.skipped}`, '']];
  return [
    [
      `indexing chunks/s, document.index job / bare model (${result.where}, ${result.chunks} chunks)`,
      `${result.ratio.toFixed(2)}  (${result.jobChunksPerSecond.toFixed(1)} / ${result.bareChunksPerSecond.toFixed(1)} chunks/s; ${(result.jobMs / 1000).toFixed(1)} / ${(result.bareMs / 1000).toFixed(1)} s)`,
      `>= ${INDEXING_AIM}`,
    ],
    ...(bestChunksPerSecond === undefined
      ? []
      : [[`  job / the best setting of the sweep (${bestChunksPerSecond.toFixed(1)} chunks/s)`, (result.jobChunksPerSecond / bestChunksPerSecond).toFixed(2), `>= ${INDEXING_AIM}`]]),
  ];
}

if (import.meta.main) {
  await runStandalone('indexing', 'bench_indexing', {
    embedded: async (db) => indexingRows(await benchIndexing(db, 'PGlite')),
    real: async (db) => indexingRows(await benchIndexing(db, 'PostgreSQL 15')),
    skipped: (reason) => indexingRows({ skipped: reason, where: 'PostgreSQL 15' }),
  });
}

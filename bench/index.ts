/**
 * `npm run bench`: the HTTP benchmarks on one migrated embedded database (opening it costs ~5 s, so
 * it is shared), the upload and the start-up benchmarks (start.ts spawns `node src/main.ts serve`
 * itself), the embedded database's thread against PGlite on the main thread (embedded-thread.ts),
 * durable commits against fsync off (durable-commits.ts), tracing off, on and before it existed (tracing.ts),
 * then the jobs, search and document benchmarks on that embedded database and on a throwaway
 * PostgreSQL 15 server with pgvector (pg-server.ts; its rows say why when it cannot be had), among
 * them NFCorpus ingested both ways on its first INGEST_DOCUMENTS documents (ingest.ts), the AI
 * service's memory and its parsing threads' CPU, and last the retrieval quality benchmark,
 * unfiltered and on two filtered paths, when its collection is there (RETRIEVAL_COLLECTION or
 * ../shared/datasets/nfcorpus; about 15 minutes more; RETRIEVAL_SAMPLE=<n> for a small sample:
 * bench/retrieval/run.ts), then a table of each figure beside its aim. A measurement, not a test:
 * nothing fails when a figure misses its aim.
 */
import { availableParallelism } from 'node:os';
import { aiMemoryRows, benchAiMemory } from './ai-memory.ts';
import { apiLatencyRows, benchApiLatency } from './api-latency.ts';
import { durableCommitRows } from './durable-commits.ts';
import { embeddedThreadRows } from './embedded-thread.ts';
import { extractThreadRows } from './extract-thread.ts';
import { benchHealthVsBare, HEALTH_AIM } from './health-vs-bare.ts';
import { benchEmbedderSweep, sweepRows } from './embedder-sweep.ts';
import { benchIndexing, indexingRows } from './indexing.ts';
import { benchIngest, ingestRows } from './ingest.ts';
import { benchJobLatency, latencyRows } from './job-latency.ts';
import { startRealServer } from './pg-server.ts';
import { benchQueue, queueRows } from './queue.ts';
import { benchRetrieval, retrievalRows } from './retrieval/run.ts';
import { benchRoutingValidation, ROUTING_AIM_US } from './routing-validation.ts';
import { benchSearch, searchRows } from './search.ts';
import { onFreshDatabase, openBenchDatabase } from './support.ts';
import { printRows } from './print-rows.ts';

/**
 * Documents of NFCorpus each way of bench/ingest.ts ingests here: 876 chunks, an estimated 5
 * minutes a database for both ways, their idle windows and bare runs on 2 cores. The whole
 * collection (3 162 documents, 5 552 chunks) or the acceptance figure (2 000, 3 522
 * chunks): `node bench/ingest.ts [--documents 2000]`.
 */
const INGEST_DOCUMENTS = 500;

const started = performance.now();
console.log(`Node ${process.version}, ${availableParallelism()} CPUs; NODE_ENV=production, LOG_LEVEL=silent`);
const db = await openBenchDatabase();
try {
  console.log('system.health, full stack vs bare node:http (32 connections, child-process client):');
  const health = await benchHealthVsBare(db);
  console.log('routing + validation, documents.list in process:');
  const routing = await benchRoutingValidation(db);

  const upload = await import('./upload.ts').then((module) => module.uploadRows()); // 25 MiB PUT /uploads vs fs copy (bench/upload.ts)
  const start = await import('./start.ts').then((module) => module.startRows()); // `serve` to /readyz: fresh, restart, without template (bench/start.ts)
  const embeddedThread = await embeddedThreadRows(); // PGlite in its thread vs on the API's thread: request latency while it works, point selects
  const durableCommits = await durableCommitRows(); // commits/s with fsync on (the default) vs off, same run (bench/durable-commits.ts)
  const tracing = await import('./tracing.ts').then((module) => module.tracingRows()); // p50 with tracing off, on and before it existed (bench/tracing.ts)

  // Search, indexing, queue, job latency and API latency while indexing, embedded first, then on a real server.
  console.log('search, 10 000 chunks on the embedded database:');
  const jobRows = searchRows(await benchSearch({ db, where: 'PGlite' }, { size: 10_000 }));
  console.log('the local model: threads × batch size × niceness, with the API answering (bench/embedder-sweep.ts):');
  // Its probe's idle p99 was 57 ms on the database the search bench had filled: a fresh one, as below.
  const sweep = await onFreshDatabase(benchEmbedderSweep);
  jobRows.push(...sweepRows(sweep));
  console.log('indexing on the embedded database:');
  jobRows.push(...indexingRows(await benchIndexing(db, 'PGlite'), sweep.best.chunksPerSecond));
  console.log('queue on the embedded database:');
  jobRows.push(...queueRows(await benchQueue(db, 'PGlite', { backlogSize: 12_000 })));
  console.log('job create → succeeded on the embedded database:');
  // Fresh as well: on the shared database its p95 was 195 ms, 34 ms on a fresh one (2026-11-28).
  jobRows.push(...latencyRows(await onFreshDatabase((fresh) => benchJobLatency(fresh, 'PGlite'))));
  console.log('API latency while a large document is indexed, on the embedded database:');
  // A database of its own, as on the real server: the one above holds the search bench's 12 600
  // chunks and what the other benches left, and in it workspaces.list's idle p99 was 44 ms
  // against 9-10 ms on a fresh one (2026-11-28), which made the ratio meaningless.
  jobRows.push(...apiLatencyRows(await onFreshDatabase((fresh) => benchApiLatency(fresh, 'PGlite'))));
  console.log(`NFCorpus ingest, upload to searchable, ${INGEST_DOCUMENTS} documents each way, on the embedded database:`);
  jobRows.push(...ingestRows(await onFreshDatabase((fresh) => benchIngest(fresh, 'PGlite', { documents: INGEST_DOCUMENTS }))));
  console.log('AI service memory:');
  jobRows.push(...aiMemoryRows(process.platform === 'linux' ? await benchAiMemory() : { skipped: 'needs /proc (Linux)' }));
  console.log("AI service, one document's parsing thread (bench/extract-thread.ts):");
  jobRows.push(...(await extractThreadRows()));
  const real = await startRealServer();
  if (real.skipped !== undefined) {
    console.log(`real PostgreSQL rows skipped: ${real.skipped}`);
    jobRows.push([`real PostgreSQL 15 rows (search 100k, indexing, queue, job latency, API latency, ingest)`, `skipped: ${real.skipped}`, '']);
  } else {
    try {
      const where = 'PostgreSQL 15';
      console.log(`search, 100 000 chunks on ${real.server.version}:`);
      const search = await real.server.database('bench_search');
      jobRows.push(...searchRows(await benchSearch({ ...search, where }, { size: 100_000 })));
      console.log(`indexing on ${real.server.version}:`);
      jobRows.push(...indexingRows(await benchIndexing((await real.server.database('bench_indexing')).db, where), sweep.best.chunksPerSecond));
      console.log(`queue on ${real.server.version}:`);
      jobRows.push(...queueRows(await benchQueue((await real.server.database('bench_queue')).db, where, { backlogSize: 20_000 })));
      console.log(`job create → succeeded on ${real.server.version}:`);
      jobRows.push(...latencyRows(await benchJobLatency((await real.server.database('bench_latency')).db, where)));
      console.log(`API latency while a large document is indexed, on ${real.server.version}:`);
      jobRows.push(...apiLatencyRows(await benchApiLatency((await real.server.database('bench_api_latency')).db, where)));
      console.log(`NFCorpus ingest, upload to searchable, ${INGEST_DOCUMENTS} documents each way, on ${real.server.version}:`);
      jobRows.push(...ingestRows(await benchIngest((await real.server.database('bench_ingest')).db, where, { documents: INGEST_DOCUMENTS })));
    } finally {
      await real.server.stop();
    }
  }

  // Last: the longest, and only when its collection is there (bench/retrieval/run.ts; its own database).
  console.log('retrieval quality:');
  jobRows.push(...retrievalRows(await benchRetrieval()));

  const rows = [
    ['measure', 'result', 'aim'],
    ['health req/s full / bare (median of rounds)', `${health.ratio.toFixed(2)}  (${Math.round(health.fullRps)} / ${Math.round(health.bareRps)})`, `>= ${HEALTH_AIM}`],
    ['  same, by server CPU per request (bare/full)', `${(health.bareCpuUs / health.fullCpuUs).toFixed(2)}  (${health.bareCpuUs.toFixed(0)} / ${health.fullCpuUs.toFixed(0)} µs)`, `>= ${HEALTH_AIM}`],
    ['routing + validation added latency', `${routing.addedUs.toFixed(1)} µs  (${routing.routedUs.toFixed(1)} - ${routing.directUs.toFixed(1)})`, `<= ${ROUTING_AIM_US} µs`],
    ['  of which validateInput alone', `${routing.validateUs.toFixed(1)} µs`, ''],
    ...upload,
    ...start,
    ...embeddedThread,
    ...durableCommits,
    ...tracing,
    ...jobRows,
  ];
  printRows(rows);
} finally {
  await db.close();
}
console.log(`\n(${((performance.now() - started) / 1000).toFixed(0)} s)`);

/**
 * Retrieval quality of documents.search on a BEIR-format test collection (docs/benchmarks.md,
 * "Retrieval quality"): nDCG@10 and Recall@10 of the hybrid ranking, of the vector and full-text
 * rankings alone, and of a plain BM25 (bm25.ts) over the same documents and queries, in one run.
 *
 * Everything goes through the real path over HTTP: the app on a loopback port with its inline
 * worker on the embedded database, the AI service in this process (startAiService, with an API
 * key). One organization and workspace; every document uploaded as text/plain (title and text
 * joined by a blank line; named `<document id>.txt`) with createUpload, the signed PUT and
 * complete, then a document.index job each: all created, then all waited for (ingest time and
 * chunks/s reported). The uploads go in SLICES slices one after the other, an instant taken
 * between slices, so that creation-date filters keep whole slices (filtered.ts). Then every test
 * query through documents.search with limit 50, once with each SEARCH_RANKING (the app started
 * again on the same database for each), unfiltered and on the two filtered paths (half the
 * documents: pgvector's iterative scan; one slice: the exact scan), each filtered query judged on
 * the documents inside its filter against BM25 restricted to them. Hits map to documents by
 * name; a document counts at its first chunk's rank, its later chunks are skipped. The search
 * limit (30 a minute per user) is kept: the searches rotate over enough members of the
 * organization that none of them reaches it.
 *
 * The collection is read from RETRIEVAL_COLLECTION, by default ../shared/datasets/nfcorpus
 * relative to the repository's root; without it the run prints `skipped:` and why (the data may
 * not be shipped with the repository: see docs/benchmarks.md). RETRIEVAL_SAMPLE=<n> runs on the
 * first n documents and the queries with a relevant document among them (dataset.ts,
 * sampleCollection), for trying a change in a few minutes; its figures are not the collection's.
 *   node bench/retrieval/run.ts
 *   RETRIEVAL_SAMPLE=300 node bench/retrieval/run.ts
 * RETRIEVAL_CAPTURE=<file> also saves both rankings of every query after the ingest (capture.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import { startAiService } from '../../src/ai-service/server.ts';
import { loadConfig } from '../../src/config.ts';
import type { Database } from '../../src/db/connection.ts';
import type { SearchRanking } from '../../src/documents/chunk-search.ts';
import { createLogger } from '../../src/logger.ts';
import { clientFor, createTenant, startDocumentApp, uploadDocument, type Client, type DocumentApp } from '../document-app.ts';
import { benchEnv, openBenchDatabase } from '../support.ts';
import { createBm25 } from './bm25.ts';
import { captureRankings } from './capture.ts';
import { collectionDir, loadCollection, sampleCollection, type Collection } from './dataset.ts';
import { filterPaths, SLICES, sliceBounds, type SearchFilters } from './filtered.ts';
import { meanOver, ndcgAt, recallAt } from './metrics.ts';
import { printReport, retrievalRows } from './report.ts';
import type { FilteredScore, RetrievalOutcome, RetrievalResult, SystemScore } from './result.ts';

export { RETRIEVAL_AIM, retrievalRows } from './report.ts';
export type { FilteredScore, RetrievalOutcome, RetrievalResult, SystemScore } from './result.ts';
const K = 10;
const SEARCH_LIMIT = 50;
/** Searches per user in one minute stay below the limit of 30. */
const SEARCHES_PER_USER = 25;
const RANKINGS: SearchRanking[] = ['hybrid', 'vector', 'fulltext'];
/** Uploads and job creations in flight at once. */
const CONCURRENCY = 8;

/** Runs `work` over `items` with at most `limit` at once, in order of start. */
async function pooled<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!, index);
      }
    }),
  );
  return results;
}

const seconds = (since: number) => (performance.now() - since) / 1000;

/**
 * The app's and the AI service's warnings and errors, kept (the first 5 000) so that a run with
 * failed jobs can say why: a job that fails here is a document missing from every ranking.
 */
function warningLog() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line && lines.length < 5000) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return {
    logger: createLogger('warn', sink),
    /** Each distinct message (with the AI client's detail, if any) and how often it was logged. */
    summary(): string[] {
      const counts = new Map<string, number>();
      for (const line of lines) {
        const err = line.err as { message?: string } | undefined;
        const detail = line.detail ?? err?.message ?? '';
        const key = `${String(line.msg)}: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`.slice(0, 300);
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      return [...counts].sort((a, b) => b[1] - a[1]).map(([key, count]) => `${count} × ${key}`);
    },
  };
}

export async function benchRetrieval(db?: Database): Promise<RetrievalOutcome> {
  const dir = collectionDir();
  if (!existsSync(join(dir, 'corpus.jsonl'))) {
    const skipped = `no collection at ${dir} (see docs/benchmarks.md)`;
    console.log(`  skipped: ${skipped}`);
    return { skipped };
  }
  const sample = Number(process.env.RETRIEVAL_SAMPLE ?? 0);
  if (!Number.isInteger(sample) || sample < 0) throw new Error(`RETRIEVAL_SAMPLE must be a whole number of documents, not ${process.env.RETRIEVAL_SAMPLE}`);
  const whole = loadCollection(dir);
  const collection = sample > 0 ? sampleCollection(whole, sample) : whole;
  console.log(`  ${collection.name}: ${collection.documents.length} documents, ${collection.queries.length} judged queries (${dir})`);
  const own = db ? undefined : await openBenchDatabase();
  const database = db ?? own!;
  const apiKey = 'bench-retrieval-ai-key-0123456789abcdef';
  const warnings = warningLog();
  const logger = warnings.logger;
  const ai = await startAiService({ settings: loadConfig({ ...benchEnv, AI_API_KEY: apiKey }).ai, host: '127.0.0.1', port: 0, logger });
  let app: DocumentApp | undefined;
  try {
    // Each ranking searches every query at most three times: unfiltered, and on each filtered path.
    const users = Math.ceil((3 * RANKINGS.length * collection.queries.length) / SEARCHES_PER_USER) + 1;
    const tenant = await createTenant(database, { users, name: 'Retrieval bench' });
    // Every document's job is created at once (ingest measures the worker, not a client's pacing),
    // so the organization may queue them all (the default limit, 100, answers 429 past it).
    const appEnv = (ranking: SearchRanking) => ({ SEARCH_RANKING: ranking, MAX_QUEUED_JOBS_PER_ORGANIZATION: String(Math.max(100, collection.documents.length)) });
    app = await startDocumentApp(database, { url: ai.url, apiKey }, appEnv('hybrid'), logger);
    const { boundaries, ...ingest } = await ingestCollection(clientFor(app, tenant.users[0]!), tenant, collection);
    const created = await database.sql<{ name: string; created_at: Date }[]>`select name, created_at from documents where workspace_id = ${tenant.workspaceId}`;
    const paths = filterPaths(collection, new Map(created.map((row) => [row.name.replace(/\.txt$/, ''), row.created_at.getTime()])), boundaries);
    for (const path of paths) console.log(`  filtered path ${path.name}: ${path.label}; ${path.queries.length} queries with a relevant document inside, ${path.skipped} skipped`);
    // Both rankings of every query, for comparing fusions offline (capture.ts, fusion.ts).
    if (process.env.RETRIEVAL_CAPTURE) await captureRankings(app, tenant, collection, process.env.RETRIEVAL_CAPTURE);
    const logged = warnings.summary();
    if (logged.length)
      console.log(
        `  warnings and errors logged while ingesting:\n${logged
          .slice(0, 15)
          .map((line) => `    ${line}`)
          .join('\n')}`,
      );

    const searchSeconds: Record<string, number> = {};
    const systems: SystemScore[] = [];
    const filteredRankings = new Map(paths.map((path) => [path.name, new Map<string, string[][]>()]));
    const outside = new Map(paths.map((path) => [path.name, 0]));
    const clients = tenant.users.map((user) => user);
    let turn = 0;
    for (const ranking of RANKINGS) {
      if (app.config.searchRanking !== ranking) {
        await app.close();
        app = await startDocumentApp(database, { url: ai.url, apiKey }, appEnv(ranking), logger);
      }
      const running = app;
      const started = performance.now();
      const rankings: string[][] = [];
      for (const query of collection.queries) {
        rankings.push(await searchDocuments(() => clientFor(running, clients[turn++ % clients.length]!), tenant.workspaceId, query.text));
      }
      searchSeconds[ranking] = seconds(started);
      systems.push(score(ranking, collection, rankings));
      console.log(`  ${ranking}: ${collection.queries.length} searches in ${searchSeconds[ranking].toFixed(1)} s`);
      for (const path of paths) {
        const pathStarted = performance.now();
        const found: string[][] = [];
        for (const query of path.queries) {
          const ids = await searchDocuments(() => clientFor(running, clients[turn++ % clients.length]!), tenant.workspaceId, query.text, query.filters);
          outside.set(path.name, outside.get(path.name)! + ids.filter((id) => !query.inside.has(id)).length);
          found.push(ids);
        }
        filteredRankings.get(path.name)!.set(ranking, found);
        searchSeconds[`${ranking} ${path.name}`] = seconds(pathStarted);
        console.log(`  ${ranking}, filtered ${path.name}: ${path.queries.length} searches in ${searchSeconds[`${ranking} ${path.name}`]!.toFixed(1)} s`);
      }
    }
    const bm25 = createBm25(collection.documents);
    systems.push(
      score(
        'BM25 (bm25.ts)',
        collection,
        collection.queries.map((query) => bm25.search(query.text, 1000).map((hit) => hit.id)),
      ),
    );
    const filtered = paths.map((path): FilteredScore => {
      const base = { name: path.name, label: path.label, share: path.share, queries: path.queries.length, skipped: path.skipped, outside: outside.get(path.name)! };
      // A small sample may leave a path without a query (there is then nothing to average).
      if (path.queries.length === 0) return { ...base, systems: [], sameQueriesRatio: Number.NaN };
      const judged = path.queries.map((query) => query.judged);
      const bySystem = [...filteredRankings.get(path.name)!].map(([ranking, found]) => scoreRuns(ranking, judged, found));
      bySystem.push(
        scoreRuns(
          'BM25 (bm25.ts)',
          judged,
          path.queries.map((query) => bm25.search(query.text, 1000, query.inside).map((hit) => hit.id)),
        ),
      );
      const unfilteredMean = (name: string) => meanOver(path.queries, (query) => systems.find((system) => system.system.startsWith(name))!.perQuery[query.index]!);
      return { ...base, systems: bySystem, sameQueriesRatio: unfilteredMean('hybrid') / unfilteredMean('BM25') };
    });

    const result: RetrievalResult = {
      collection: collection.name,
      documents: collection.documents.length,
      queries: collection.queries.length,
      ...ingest,
      searchSeconds,
      systems,
      filtered,
    };
    printReport(result);
    return result;
  } finally {
    await app?.close();
    await ai.close();
    await own?.close();
  }
}

/** Uploads every document, creates a document.index job for each, waits for them all. */
async function ingestCollection(client: Client, tenant: Awaited<ReturnType<typeof createTenant>>, collection: Collection) {
  const encoder = new TextEncoder();
  let started = performance.now();
  // Slice after slice, an instant taken between them (a few ms apart from both, so no document of
  // either slice shares its millisecond): the filtered paths' creation-date filters (filtered.ts).
  const pause = () => new Promise((resolve) => setTimeout(resolve, 3));
  const boundaries: Date[] = [];
  const documentIds: string[] = [];
  for (let s = 0; s < SLICES; s++) {
    await pause();
    boundaries.push(new Date());
    await pause();
    const [start, end] = sliceBounds(collection.documents.length, s);
    documentIds.push(
      ...(await pooled(collection.documents.slice(start, end), CONCURRENCY, (document) => {
        const text = document.title ? `${document.title}\n\n${document.text}` : document.text;
        return uploadDocument(client, tenant, `${document.id}.txt`, 'text/plain', encoder.encode(text));
      })),
    );
  }
  await pause();
  boundaries.push(new Date());
  const uploadSeconds = seconds(started);
  console.log(`  uploaded ${documentIds.length} documents in ${uploadSeconds.toFixed(1)} s`);

  started = performance.now();
  const jobIds = await pooled(documentIds, CONCURRENCY, async (documentId) => (await client.jobs.create({ organizationId: tenant.organizationId, kind: 'document.index', documentId })).id);
  console.log(`  created ${jobIds.length} document.index jobs in ${seconds(started).toFixed(1)} s`);
  let chunks = 0;
  let failedJobs = 0;
  for (const [index, id] of jobIds.entries()) {
    for (;;) {
      const job = await client.jobs.get({ id });
      if (job.status === 'succeeded') chunks += (job.result as { chunks: number }).chunks;
      else if (job.status === 'failed' || job.status === 'canceled') {
        if (failedJobs++ < 5) console.log(`  job ${id} ${job.status}: ${JSON.stringify(job.error)}`);
      } else {
        await new Promise((resolve) => setTimeout(resolve, 250));
        continue;
      }
      break;
    }
    if ((index + 1) % 500 === 0) console.log(`  ${index + 1} jobs settled after ${seconds(started).toFixed(0)} s (${chunks} chunks)`);
  }
  const indexSeconds = seconds(started);
  console.log(`  indexed ${chunks} chunks in ${indexSeconds.toFixed(1)} s (${(chunks / indexSeconds).toFixed(1)} chunks/s), ${failedJobs} jobs failed`);
  return { chunks, failedJobs, uploadSeconds, indexSeconds, boundaries };
}

/**
 * documents.search (limit 50) as the next user in turn; the ranking's document ids, each at its
 * first chunk. A 429 (should a user still reach the limit) waits and asks again as the next user.
 */
async function searchDocuments(nextClient: () => Client, workspaceId: string, query: string, filters?: SearchFilters): Promise<string[]> {
  for (let attempt = 0; ; attempt++) {
    try {
      const answer = await nextClient().documents.search({ workspaceId, query, limit: SEARCH_LIMIT, ...(filters ? { filters } : {}) });
      return [...new Set(answer.results.map((hit) => hit.documentName.replace(/\.txt$/, '')))];
    } catch (error) {
      if ((error as ApiClientError).status !== 429 || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5000));
    }
  }
}

function score(system: string, collection: Collection, rankings: string[][]): SystemScore {
  return scoreRuns(
    system,
    collection.queries.map((query) => collection.qrels.get(query.id) ?? new Map<string, number>()),
    rankings,
  );
}

/** nDCG@K and Recall@K of `rankings` against `judged`, query by query. */
function scoreRuns(system: string, judged: readonly ReadonlyMap<string, number>[], rankings: readonly string[][]): SystemScore {
  const runs = judged.map((grades, i) => ({ judged: grades, ranking: rankings[i]! }));
  return {
    system,
    ndcg: meanOver(runs, (run) => ndcgAt(K, run.ranking, run.judged)),
    recall: meanOver(runs, (run) => recallAt(K, run.ranking, run.judged)),
    perQuery: runs.map((run) => ndcgAt(K, run.ranking, run.judged)),
  };
}

if (import.meta.main) {
  const started = performance.now();
  console.log('retrieval quality:');
  const rows = retrievalRows(await benchRetrieval());
  console.log();
  for (const row of rows) console.log(row.join('  |  '));
  console.log(`(${seconds(started).toFixed(0)} s)`);
}

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
 * chunks/s reported). Then every test query through documents.search with limit 50, once with each
 * SEARCH_RANKING (the app started again on the same database for each). Hits map to documents by
 * name; a document counts at its first chunk's rank, its later chunks are skipped. The search
 * limit (30 a minute per user) is kept: the searches rotate over enough members of the
 * organization that none of them reaches it.
 *
 * The collection is read from RETRIEVAL_COLLECTION, by default ../shared/datasets/nfcorpus
 * relative to the repository's root; without it the run prints `skipped:` and why (the data may
 * not be shipped with the repository: see docs/benchmarks.md).
 *   node bench/retrieval/run.ts
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
import { collectionDir, loadCollection, type Collection } from './dataset.ts';
import { meanOver, ndcgAt, recallAt } from './metrics.ts';

/** Hybrid's aim: at least this many times BM25's nDCG@10, and above each ranking alone. */
export const RETRIEVAL_AIM = 1.05;
const K = 10;
const SEARCH_LIMIT = 50;
/** Searches per user in one minute stay below the limit of 30. */
const SEARCHES_PER_USER = 25;
const RANKINGS: SearchRanking[] = ['hybrid', 'vector', 'fulltext'];
/** Uploads and job creations in flight at once. */
const CONCURRENCY = 8;

export interface SystemScore {
  system: string;
  ndcg: number;
  recall: number;
  /** Per query, in the collection's order (for comparisons). */
  perQuery: number[];
}

export interface RetrievalResult {
  collection: string;
  documents: number;
  queries: number;
  chunks: number;
  failedJobs: number;
  uploadSeconds: number;
  /** From the first jobs.create to the last job settled. */
  indexSeconds: number;
  searchSeconds: Record<string, number>;
  systems: SystemScore[];
}

export type RetrievalOutcome = RetrievalResult | { skipped: string };

/** Runs `work` over `items` with at most `limit` at once, in order of start. */
async function pooled<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!, index);
    }
  }));
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
        const key = `${String(line.msg)}: ${String(line.detail ?? err?.message ?? '')}`.slice(0, 300);
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
  const collection = loadCollection(dir);
  console.log(`  ${collection.name}: ${collection.documents.length} documents, ${collection.queries.length} judged queries (${dir})`);
  const own = db ? undefined : await openBenchDatabase();
  const database = db ?? own!;
  const apiKey = 'bench-retrieval-ai-key-0123456789abcdef';
  const warnings = warningLog();
  const logger = warnings.logger;
  const ai = await startAiService({ settings: loadConfig({ ...benchEnv, AI_API_KEY: apiKey }).ai, host: '127.0.0.1', port: 0, logger });
  let app: DocumentApp | undefined;
  try {
    const users = Math.ceil((RANKINGS.length * collection.queries.length) / SEARCHES_PER_USER) + 1;
    const tenant = await createTenant(database, { users, name: 'Retrieval bench' });
    app = await startDocumentApp(database, { url: ai.url, apiKey }, { SEARCH_RANKING: 'hybrid' }, logger);
    const ingest = await ingestCollection(clientFor(app, tenant.users[0]!), tenant, collection);
    const logged = warnings.summary();
    if (logged.length) console.log(`  warnings and errors logged while ingesting:\n${logged.slice(0, 15).map((line) => `    ${line}`).join('\n')}`);

    const searchSeconds: Record<string, number> = {};
    const systems: SystemScore[] = [];
    const clients = tenant.users.map((user) => user);
    let turn = 0;
    for (const ranking of RANKINGS) {
      if (app.config.searchRanking !== ranking) {
        await app.close();
        app = await startDocumentApp(database, { url: ai.url, apiKey }, { SEARCH_RANKING: ranking }, logger);
      }
      const running = app;
      const started = performance.now();
      const rankings: string[][] = [];
      for (const query of collection.queries) {
        rankings.push(await searchDocuments(() => clientFor(running, clients[turn++ % clients.length]!), tenant.workspaceId, query.text));
      }
      searchSeconds[ranking] = seconds(started);
      systems.push(score(ranking, collection, rankings));
      console.log(`  ${ranking}: ${collection.queries.length} searches in ${searchSeconds[ranking]!.toFixed(1)} s`);
    }
    const bm25 = createBm25(collection.documents);
    systems.push(score('BM25 (bm25.ts)', collection, collection.queries.map((query) => bm25.search(query.text, 1000).map((hit) => hit.id))));

    const result: RetrievalResult = {
      collection: collection.name,
      documents: collection.documents.length,
      queries: collection.queries.length,
      ...ingest,
      searchSeconds,
      systems,
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
  const documentIds = await pooled(collection.documents, CONCURRENCY, (document) => {
    const text = document.title ? `${document.title}\n\n${document.text}` : document.text;
    return uploadDocument(client, tenant, `${document.id}.txt`, 'text/plain', encoder.encode(text));
  });
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
  return { chunks, failedJobs, uploadSeconds, indexSeconds };
}

/**
 * documents.search (limit 50) as the next user in turn; the ranking's document ids, each at its
 * first chunk. A 429 (should a user still reach the limit) waits and asks again as the next user.
 */
async function searchDocuments(nextClient: () => Client, workspaceId: string, query: string): Promise<string[]> {
  for (let attempt = 0; ; attempt++) {
    try {
      const answer = await nextClient().documents.search({ workspaceId, query, limit: SEARCH_LIMIT });
      return [...new Set(answer.results.map((hit) => hit.documentName.replace(/\.txt$/, '')))];
    } catch (error) {
      if ((error as ApiClientError).status !== 429 || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5000));
    }
  }
}

function score(system: string, collection: Collection, rankings: string[][]): SystemScore {
  const runs = collection.queries.map((query, i) => ({ judged: collection.qrels.get(query.id) ?? new Map<string, number>(), ranking: rankings[i]! }));
  return {
    system,
    ndcg: meanOver(runs, (run) => ndcgAt(K, run.ranking, run.judged)),
    recall: meanOver(runs, (run) => recallAt(K, run.ranking, run.judged)),
    perQuery: runs.map((run) => ndcgAt(K, run.ranking, run.judged)),
  };
}

function printReport(result: RetrievalResult) {
  const bm25 = result.systems.find((system) => system.system.startsWith('BM25'))!;
  console.log(`  ${'system'.padEnd(16)} nDCG@${K}  Recall@${K}  nDCG / BM25`);
  for (const system of result.systems) {
    console.log(`  ${system.system.padEnd(16)} ${system.ndcg.toFixed(4)}   ${system.recall.toFixed(4)}     ${(system.ndcg / bm25.ndcg).toFixed(3)}`);
  }
  // Per query against BM25: where each ranking wins and loses.
  for (const system of result.systems.filter((s) => s !== bm25)) {
    const better = system.perQuery.filter((value, i) => value > bm25.perQuery[i]! + 1e-9).length;
    const worse = system.perQuery.filter((value, i) => value < bm25.perQuery[i]! - 1e-9).length;
    console.log(`  ${system.system} vs BM25, per query nDCG@${K}: better ${better}, worse ${worse}, equal ${system.perQuery.length - better - worse}`);
  }
}

/** Rows for bench/index.ts's table. */
export function retrievalRows(result: RetrievalOutcome): string[][] {
  if ('skipped' in result) return [['retrieval quality (bench/retrieval/run.ts)', `skipped: ${result.skipped}`, '']];
  const bm25 = result.systems.find((system) => system.system.startsWith('BM25'))!;
  const of = (name: string) => result.systems.find((system) => system.system === name)!;
  const hybrid = of('hybrid');
  const rows = [[
    `retrieval ${result.collection} nDCG@${K}, hybrid / BM25 (${result.documents} docs, ${result.queries} queries)`,
    `${(hybrid.ndcg / bm25.ndcg).toFixed(3)}  (${hybrid.ndcg.toFixed(4)} / ${bm25.ndcg.toFixed(4)})`,
    `>= ${RETRIEVAL_AIM}`,
  ]];
  for (const system of result.systems) {
    rows.push([`  ${system.system} nDCG@${K}, Recall@${K}, / BM25`, `${system.ndcg.toFixed(4)}, ${system.recall.toFixed(4)}, ${(system.ndcg / bm25.ndcg).toFixed(3)}`, system === hybrid ? '' : system === bm25 ? '' : `< hybrid`]);
  }
  rows.push([`  ingest: upload, index (${result.chunks} chunks)`, `${result.uploadSeconds.toFixed(0)} s, ${result.indexSeconds.toFixed(0)} s (${(result.chunks / result.indexSeconds).toFixed(1)} chunks/s; ${result.failedJobs} jobs failed)`, '']);
  return rows;
}

if (import.meta.main) {
  const started = performance.now();
  console.log('retrieval quality:');
  const rows = retrievalRows(await benchRetrieval());
  console.log();
  for (const row of rows) console.log(row.join('  |  '));
  console.log(`(${seconds(started).toFixed(0)} s)`);
}

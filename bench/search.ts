/**
 * The vector ranking of documents.search (searchChunks(…, 'vector') in chunk-search.ts: HNSW,
 * cosine, iterative scan within a workspace's chunks of one model, read to RANKING_DEPTH, then the
 * hits described) against an exact scan of the same workspace, on a synthetic corpus shaped like
 * real embeddings (search-corpus.ts): one workspace of `size` chunks among four (the others 1/5,
 * 1/20 and 1/100 of it, each in its own organization, all sharing the topics so their vectors
 * interleave). The hybrid and full-text rankings are measured for quality by retrieval/run.ts.
 *
 * The exact path is the same searchChunks call with index scans disabled for its connection
 * (`enable_indexscan = off`: PostgreSQL then scans the workspace's rows and sorts by distance),
 * so both paths send identical statements; query-plan.ts EXPLAINs them to show which plan each
 * gets. Reports p50/p95 of each path over `queries` queries (after a warm-up), the p95 ratio,
 * recall@10 of the HNSW answer against the exact one, and how many answers came back short of
 * `limit` although the workspace holds enough chunks (what iterative scans prevent), for every
 * workspace. A measurement, not a test: nothing fails when a figure misses its aim.
 *   node bench/search.ts [--size N] [--embedded-only | --real-only]
 */
import postgres from 'postgres';
import type { Database, Sql } from '../src/db/connection.ts';
import { RANKING_DEPTH } from '../src/documents/chunk-search.ts';
import { startRealServer } from './pg-server.ts';
import { planCacheUse, searchPlans, searchVariant, vectorSearch, type SearchPlans } from './query-plan.ts';
import { Corpus, CORPUS_MODEL, loadCorpus, type CorpusWorkspace, type LoadTimings } from './search-corpus.ts';
import { openBenchDatabase, percentile } from './support.ts';

export const SEARCH_AIM = { p95Ratio: 0.25, recall: 0.95 };
const LIMIT = 10;
const WORKSPACE_SHARES = [1, 1 / 5, 1 / 20, 1 / 100];
/** hnsw.ef_search values tried beside searchChunks' own (160). */
const EF_SWEEP = [RANKING_DEPTH, 2 * RANKING_DEPTH];

export interface WorkspaceCheck {
  chunks: number;
  queries: number;
  recall: number;
  /** Answers with fewer than LIMIT hits. */
  short: number;
  plan: SearchPlans;
}

export interface SearchResult extends LoadTimings {
  where: string;
  chunks: number;
  totalChunks: number;
  hnsw: { p50: number; p95: number };
  exact: { p50: number; p95: number };
  /** p95 HNSW / p95 exact. */
  ratio: number;
  recall: number;
  /** Recall of the queries made from one document (even) and from a topic only (odd). */
  recallByKind: { document: number; topic: number };
  /** searchChunks' statements at other hnsw.ef_search values (query-plan.ts, searchVariant). */
  efSweep: { efSearch: number; recall: number; p50: number; p95: number }[];
  short: number;
  queries: number;
  plans: { hnsw: SearchPlans; exact: SearchPlans };
  /** How one connection planned the search over `queries` runs (custom or generic plans). */
  cache: { custom: number; generic: number };
  /** The smaller workspaces. */
  others: WorkspaceCheck[];
}

/** A searcher for the exact path: searchChunks on a connection where index scans are off. */
interface ExactPath {
  run<T>(body: (sql: Sql) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

function exactPath(db: Database, url: string | undefined): ExactPath {
  if (url) {
    // A connection of its own with the setting from its startup message.
    const sql = postgres(url, { max: 1, onnotice: () => {}, connection: { enable_indexscan: 'off' } });
    return { run: (body) => body(sql), close: () => sql.end({ timeout: 5 }) };
  }
  // The embedded database has one session: switch it for the duration of the exact runs.
  return {
    async run(body) {
      await db.sql`select set_config('enable_indexscan', 'off', false)`;
      try {
        return await body(db.sql);
      } finally {
        await db.sql`select set_config('enable_indexscan', 'on', false)`;
      }
    },
    close: async () => {},
  };
}

/** What the benchmark asks: LIMIT chunks of the corpus' model in a workspace, nearest to `vector`. */
const query = (workspaceId: string, vector: number[]) => ({ workspaceId, model: CORPUS_MODEL, vector, limit: LIMIT });

const ms = (runs: { ms: number }[]) => ({
  p50: percentile(
    runs.map((r) => r.ms),
    50,
  ),
  p95: percentile(
    runs.map((r) => r.ms),
    95,
  ),
});

async function timed(search: () => Promise<{ chunkId: string }[]>): Promise<{ ms: number; ids: string[] }> {
  const started = performance.now();
  const hits = await search();
  return { ms: performance.now() - started, ids: hits.map((hit) => hit.chunkId) };
}

function recallOf(found: string[][], truth: string[][]): number {
  const each = truth.map((exact, i) => (exact.length ? exact.filter((id) => found[i]!.includes(id)).length / exact.length : 1));
  return each.reduce((sum, value) => sum + value, 0) / each.length;
}

export async function benchSearch(target: { db: Database; url?: string; where: string }, { size, queries = 100, warmup = 30 }: { size: number; queries?: number; warmup?: number }): Promise<SearchResult> {
  const { db, url } = target;
  const corpus = new Corpus(WORKSPACE_SHARES.map((share) => Math.max(LIMIT * 5, Math.round(size * share))));
  console.log(`  loading ${corpus.totalChunks} chunks (${corpus.workspaces.map((w) => w.chunks).join(' + ')}) into ${target.where}`);
  const load = await loadCorpus(db, corpus, url);
  console.log(`  loaded in ${(load.loadMs / 1000).toFixed(1)} s, HNSW and GIN indexes built in ${(load.indexMs / 1000).toFixed(1)} s`);
  const exact = exactPath(db, url);
  try {
    const [main, ...rest] = corpus.workspaces as [CorpusWorkspace, ...CorpusWorkspace[]];
    const vectors = corpus.queries(main, warmup + queries);
    const measured = vectors.slice(warmup);

    const exactRuns = await exact.run(async (sql) => {
      for (const vector of vectors.slice(0, 3)) await vectorSearch(sql, query(main.id, vector));
      const runs = [];
      for (const vector of measured) runs.push(await timed(() => vectorSearch(sql, query(main.id, vector))));
      return runs;
    });
    for (const vector of vectors.slice(0, warmup)) await vectorSearch(db.sql, query(main.id, vector));
    const hnswRuns = [];
    for (const vector of measured) hnswRuns.push(await timed(() => vectorSearch(db.sql, query(main.id, vector))));

    const plans = {
      hnsw: await searchPlans(db.sql, query(main.id, measured[0]!)),
      exact: await searchPlans(db.sql, query(main.id, measured[0]!), { indexScans: false }),
    };
    const cache = await planCacheOnOneConnection(db, url, main.id, measured);
    const truth = exactRuns.map((r) => r.ids);
    const efSweep = [];
    for (const efSearch of EF_SWEEP) {
      const runs = [];
      for (const vector of measured) runs.push(await timed(() => searchVariant(db.sql, query(main.id, vector), { efSearch })));
      efSweep.push({
        efSearch,
        ...ms(runs),
        recall: recallOf(
          runs.map((r) => r.ids),
          truth,
        ),
      });
    }
    const result: SearchResult = {
      where: target.where,
      ...load,
      chunks: main.chunks,
      totalChunks: corpus.totalChunks,
      hnsw: ms(hnswRuns),
      exact: ms(exactRuns),
      ratio:
        percentile(
          hnswRuns.map((r) => r.ms),
          95,
        ) /
        percentile(
          exactRuns.map((r) => r.ms),
          95,
        ),
      recall: recallOf(
        hnswRuns.map((r) => r.ids),
        truth,
      ),
      recallByKind: {
        document: recallOf(
          hnswRuns.filter((_, i) => i % 2 === 0).map((r) => r.ids),
          truth.filter((_, i) => i % 2 === 0),
        ),
        topic: recallOf(
          hnswRuns.filter((_, i) => i % 2 === 1).map((r) => r.ids),
          truth.filter((_, i) => i % 2 === 1),
        ),
      },
      efSweep,
      short: hnswRuns.filter((r) => r.ids.length < LIMIT).length,
      queries,
      plans,
      cache,
      others: [],
    };
    console.log(
      `  ${main.chunks} chunks: hnsw p50 ${result.hnsw.p50.toFixed(1)} ms p95 ${result.hnsw.p95.toFixed(1)} ms; exact p50 ${result.exact.p50.toFixed(1)} ms p95 ${result.exact.p95.toFixed(1)} ms; recall@${LIMIT} ${result.recall.toFixed(3)}; short answers ${result.short}/${queries}`,
    );
    printPlans('hnsw ', plans.hnsw);
    console.log(`    recall by query kind: near a document ${result.recallByKind.document.toFixed(3)}, near a topic ${result.recallByKind.topic.toFixed(3)}`);
    console.log(`    with other ef_search: ${efSweep.map((e) => `${e.efSearch}: recall ${e.recall.toFixed(3)} p95 ${e.p95.toFixed(1)} ms`).join('; ')}`);
    console.log(`    one connection over ${cache.custom + cache.generic} searches: ${cache.custom} custom plans, ${cache.generic} generic`);
    printPlans('exact', plans.exact);

    // The smaller workspaces: the same query, far more selective for the index.
    for (const workspace of rest) {
      const sample = corpus.queries(workspace, 20);
      const truth = await exact.run(async (sql) => Promise.all(sample.map((vector) => timed(() => vectorSearch(sql, query(workspace.id, vector))))));
      const found: { ids: string[] }[] = [];
      for (const vector of sample) found.push(await timed(() => vectorSearch(db.sql, query(workspace.id, vector))));
      const check: WorkspaceCheck = {
        chunks: workspace.chunks,
        queries: sample.length,
        recall: recallOf(
          found.map((r) => r.ids),
          truth.map((r) => r.ids),
        ),
        short: found.filter((r) => r.ids.length < LIMIT).length,
        plan: await searchPlans(db.sql, query(workspace.id, sample[0]!)),
      };
      result.others.push(check);
      console.log(
        `  ${workspace.chunks} chunks: recall@${LIMIT} ${check.recall.toFixed(3)}, short answers ${check.short}/${sample.length}, plan ${check.plan.custom.hnsw ? 'HNSW' : 'no index on embeddings'} (generic: ${check.plan.generic.hnsw ? 'HNSW' : 'no index on embeddings'})`,
      );
    }
    return result;
  } finally {
    await exact.close();
  }
}

/**
 * The embedded database's one session has run every search above; on a real server the pool spread
 * them over its connections, so the same searches run again on a connection of their own.
 */
async function planCacheOnOneConnection(db: Database, url: string | undefined, workspaceId: string, vectors: number[][]) {
  if (!url) return planCacheUse(db.sql);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    for (const vector of vectors) await vectorSearch(sql, query(workspaceId, vector));
    return await planCacheUse(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

function printPlans(label: string, plans: SearchPlans) {
  console.log(`    ${label} plan, custom:  ${plans.custom.nodes}`);
  if (plans.generic.nodes !== plans.custom.nodes) console.log(`    ${label} plan, generic: ${plans.generic.nodes}`);
}

const yes = (value: boolean) => (value ? 'yes' : 'no');

/** Rows for bench/index.ts's table. */
export function searchRows(result: SearchResult | { skipped: string; where: string; size: number }): string[][] {
  const scale = `${Math.round(('chunks' in result ? result.chunks : result.size) / 1000)}k`;
  if ('skipped' in result) return [[`search ${scale} chunks, ${result.where}`, `skipped: ${result.skipped}`, '']];
  const short = result.short + result.others.reduce((sum, other) => sum + other.short, 0);
  const asked = result.queries + result.others.reduce((sum, other) => sum + other.queries, 0);
  return [
    [
      `search ${scale} chunks (${result.where}) p95 HNSW / exact`,
      `${result.ratio.toFixed(3)}  (${result.hnsw.p95.toFixed(1)} / ${result.exact.p95.toFixed(1)} ms; p50 ${result.hnsw.p50.toFixed(1)} / ${result.exact.p50.toFixed(1)})`,
      `<= ${SEARCH_AIM.p95Ratio}`,
    ],
    [
      `  recall@${LIMIT} vs exact (${result.queries} queries)`,
      `${result.recall.toFixed(3)}  (near a document ${result.recallByKind.document.toFixed(2)}, near a topic ${result.recallByKind.topic.toFixed(2)})`,
      `>= ${SEARCH_AIM.recall}`,
    ],
    [`  recall, p95 at other ef_search (default 160)`, result.efSweep.map((e) => `${e.efSearch}: ${e.recall.toFixed(3)} ${e.p95.toFixed(1)} ms`).join(', '), ''],
    ['  answers short of the limit, all workspaces', `${short} of ${asked}  (recall in smaller ones: ${result.others.map((o) => o.recall.toFixed(2)).join(', ')})`, '0'],
    [
      '  plan uses HNSW: custom / generic; exact path',
      `${yes(result.plans.hnsw.custom.hnsw)} / ${yes(result.plans.hnsw.generic.hnsw)}; ${result.plans.exact.custom.hnsw ? 'HNSW (wrong)' : 'no index on embeddings'}`,
      'yes / yes; none',
    ],
    [`  generic plans in ${result.cache.custom + result.cache.generic} runs on one connection`, String(result.cache.generic), '0'],
    [`  load ${Math.round(result.totalChunks / 1000)}k rows, then build HNSW and GIN`, `${(result.loadMs / 1000).toFixed(1)} s + ${(result.indexMs / 1000).toFixed(1)} s`, ''],
  ];
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const sizeArg = args.indexOf('--size');
  const rows: string[][] = [];
  if (!args.includes('--real-only')) {
    const size = sizeArg >= 0 ? Number(args[sizeArg + 1]) : 10_000;
    const db = await openBenchDatabase();
    try {
      console.log('search on the embedded database:');
      rows.push(...searchRows(await benchSearch({ db, where: 'PGlite' }, { size })));
    } finally {
      await db.close();
    }
  }
  if (!args.includes('--embedded-only')) {
    const size = sizeArg >= 0 ? Number(args[sizeArg + 1]) : 100_000;
    const real = await startRealServer();
    if (real.skipped !== undefined) rows.push(...searchRows({ skipped: real.skipped, where: 'PostgreSQL 15', size }));
    else {
      try {
        console.log(`search on ${real.server.version}:`);
        const { db, url } = await real.server.database('bench_search');
        rows.push(...searchRows(await benchSearch({ db, url, where: 'PostgreSQL 15' }, { size })));
      } finally {
        await real.server.stop();
      }
    }
  }
  for (const row of rows) console.log(row.join('  |  '));
}

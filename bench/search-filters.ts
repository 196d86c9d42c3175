/**
 * documents.search's filters on the vector ranking (chunk-search.ts, filterValues): searchChunks as
 * it is (pgvector's iterative HNSW scan with the filter in the WHERE, or its own exact scan when
 * the filter is selective) against a forced exact scan of the filtered chunks (the same statements
 * with index scans off: PostgreSQL then finds the chunks by the filter and sorts them by distance), on the synthetic corpus of bench/search.ts, for filters
 * from very selective (three documents) to loose (half the workspace). Reports per filter the p50
 * and p95 of each path, recall@10 of the HNSW answer against the exact one, and how many answers
 * came back short of `limit`. A measurement, not a test.
 *   node bench/search-filters.ts [--size N] [--embedded-only | --real-only]
 */
import postgres from 'postgres';
import type { Database, Sql } from '../src/db/connection.ts';
import { searchChunks, type SearchFilters } from '../src/documents/chunk-search.ts';
import { startRealServer } from './pg-server.ts';
import { Corpus, CORPUS_MODEL, loadCorpus, type CorpusWorkspace } from './search-corpus.ts';
import { openBenchDatabase, percentile } from './support.ts';

const LIMIT = 10;
const QUERIES = 40;
const WARMUP = 10;

interface Case {
  name: string;
  filters: SearchFilters;
}

/** Marks every 10th and every 100th document with their own content types and spreads created_at over a day, so filters of known selectivity exist. */
async function shape(sql: Sql, workspace: CorpusWorkspace): Promise<Case[]> {
  const ids = workspace.documents.map((document) => document.id);
  const tenth = ids.filter((_, i) => i % 10 === 0);
  const hundredth = ids.filter((_, i) => i % 100 === 5);
  await sql`update documents set content_type = 'application/pdf' where id = any(${tenth}::text[])`;
  await sql`update documents set content_type = 'text/html' where id = any(${hundredth}::text[])`;
  await sql`
    update documents d set created_at = '2026-11-01T00:00:00Z'::timestamptz + (o.n * interval '1 second')
    from unnest(${ids}::text[]) with ordinality as o(id, n) where d.id = o.id`;
  await sql`analyze documents`;
  const half = new Date(Date.parse('2026-11-01T00:00:00Z') + (ids.length / 2) * 1000);
  return [
    { name: 'none', filters: {} },
    { name: '3 documentIds', filters: { documentIds: [ids[1]!, ids[ids.length >> 1]!, ids[ids.length - 2]!] } },
    { name: 'contentTypes, 1% of documents', filters: { contentTypes: ['text/html'] } },
    { name: 'contentTypes, 10% of documents', filters: { contentTypes: ['application/pdf'] } },
    { name: 'createdAfter, 50% of documents', filters: { createdAfter: half } },
  ];
}

interface Run {
  ms: number;
  ids: string[];
}

async function timed(sql: Sql, workspaceId: string, vector: number[], filters: SearchFilters): Promise<Run> {
  const started = performance.now();
  const hits = await searchChunks(sql, { workspaceId, model: CORPUS_MODEL, text: '', vector, limit: LIMIT, filters }, 'vector');
  return { ms: performance.now() - started, ids: hits.map((hit) => hit.chunkId) };
}

async function bench(db: Database, url: string | undefined, where: string, size: number): Promise<string[][]> {
  const corpus = new Corpus([size]);
  console.log(`  loading ${size} chunks into ${where}`);
  await loadCorpus(db, corpus, url);
  const workspace = corpus.workspaces[0]!;
  const cases = await shape(db.sql, workspace);
  const vectors = corpus.queries(workspace, WARMUP + QUERIES);
  // The exact path: index scans off (a connection of its own on a real server; the embedded
  // database's one session switched for the duration).
  const exactSql = url ? (postgres(url, { max: 1, onnotice: () => {}, connection: { enable_indexscan: 'off' } }) as unknown as Sql) : db.sql;
  const rows: string[][] = [];
  try {
    for (const { name, filters } of cases) {
      const hnsw: Run[] = [];
      for (const [i, vector] of vectors.entries()) {
        const run = await timed(db.sql, workspace.id, vector, filters);
        if (i >= WARMUP) hnsw.push(run);
      }
      if (!url) await db.sql`select set_config('enable_indexscan', 'off', false)`;
      const exact: Run[] = [];
      try {
        for (const [i, vector] of vectors.entries()) {
          const run = await timed(exactSql, workspace.id, vector, filters);
          if (i >= WARMUP) exact.push(run);
        }
      } finally {
        if (!url) await db.sql`select set_config('enable_indexscan', 'on', false)`;
      }
      const recall = exact.reduce((sum, truth, i) => sum + (truth.ids.length ? truth.ids.filter((id) => hnsw[i]!.ids.includes(id)).length / truth.ids.length : 1), 0) / exact.length;
      const short = hnsw.filter((run, i) => run.ids.length < exact[i]!.ids.length).length;
      const p = (runs: { ms: number }[], q: number) =>
        percentile(
          runs.map((r) => r.ms),
          q,
        ).toFixed(1);
      const row = [
        `${where} ${Math.round(size / 1000)}k, filter ${name}`,
        `searchChunks p50 ${p(hnsw, 50)} p95 ${p(hnsw, 95)} ms; forced exact p50 ${p(exact, 50)} p95 ${p(exact, 95)} ms`,
        `recall@${LIMIT} vs exact ${recall.toFixed(3)}, short ${short}/${QUERIES}`,
      ];
      console.log(`  ${row.join('; ')}`);
      rows.push(row);
    }
  } finally {
    if (url) await (exactSql as unknown as postgres.Sql).end({ timeout: 5 });
  }
  return rows;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const sizeArg = args.indexOf('--size');
  const rows: string[][] = [];
  if (!args.includes('--real-only')) {
    const db = await openBenchDatabase();
    try {
      rows.push(...(await bench(db, undefined, 'PGlite', sizeArg >= 0 ? Number(args[sizeArg + 1]) : 10_000)));
    } finally {
      await db.close();
    }
  }
  if (!args.includes('--embedded-only')) {
    const real = await startRealServer();
    if (real.skipped !== undefined) rows.push(['PostgreSQL 15', `skipped: ${real.skipped}`, '']);
    else {
      try {
        const { db, url } = await real.server.database('bench_search_filters');
        rows.push(...(await bench(db, url, 'PostgreSQL 15', sizeArg >= 0 ? Number(args[sizeArg + 1]) : 50_000)));
      } finally {
        await real.server.stop();
      }
    }
  }
  for (const row of rows) console.log(row.join('  |  '));
}

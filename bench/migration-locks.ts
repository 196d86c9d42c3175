/**
 * Migrations and search at scale (issue 37, item 5): what this release's migration steps cost the
 * traffic on a large table, and what documents.search costs there. On a throwaway PostgreSQL 15
 * (pg-server.ts), for each size:
 *
 * 1. The previous release's schema (sql/ up to releases/previous.json's lastMigration), then N
 *    chunks from bench/large-data.ts in ten workspaces (one of 55%, nine of 5%), ANALYZEd. The
 *    chunks are loaded without their text hash (a BEFORE INSERT trigger during the load), as the
 *    service stored chunks before sql/0013: the state `update document_chunks set text_hash = null`
 *    would leave, without that update's own cost (a second version of every row, each inserted into
 *    the HNSW graph again, and a table twice the size).
 * 2. documents.search's SQL on the big workspace (searchChunks as documents.search calls it, with
 *    a chunk's vector and the corpus' query words, on a connection with the service's
 *    statement_timeout): p50/p95 over QUERIES after a warm-up, each case cut short by its time
 *    budget. The vector ranking alone against the same call on a connection with
 *    `enable_indexscan = off` (an exact scan), and the plan it gets (query-plan.ts); the hybrid
 *    against the vector ranking alone, with the full-text ranking's own figure; the hybrid with the
 *    API's filters (documents, media types, creation ranges) against the unfiltered hybrid.
 * 3. Each step while two probe sessions run every PROBE_MS: one reads a chunk of the big workspace
 *    by id, one updates a chunk of a scratch document (a small workspace's); the longest stall of
 *    each (from when a probe was due to its answer) and the strongest lock other sessions held on
 *    document_chunks (pg_locks every LOCK_SAMPLE_MS, so shorter locks may not show) with how long
 *    it was seen. Steps: (a) this release's `migrate()` (sql/ after lastMigration, through the
 *    runner); (b) the background migration chunk-text-hashes (runSlice, slice after slice, as the
 *    workers run it) over every chunk, while a search loop runs; then the VACUUM that autovacuum
 *    would run after it; (c) for reference, at REFERENCE_MAX_CHUNKS or fewer (or with --reference):
 *    0014's shape (drop and re-add the generated stored columns, one transaction, plain SQL),
 *    0015's (drop and build the HNSW graph, one transaction) and the same graph built CONCURRENTLY
 *    through the runner (a scratch migration file after the real ones). At larger sizes (c) is
 *    extrapolated from a smaller size of the same run, and says so.
 *
 *   node bench/migration-locks.ts [--chunks N[,N...]] [--reference]
 *
 * Default 100 000 chunks (about 20 minutes on two cores, most of it the backfill); BENCH_LARGE=1
 * adds 1 000 000 (hours: docs/benchmarks.md, "Migrations and search at scale"). Too long for
 * `make bench`, so not in it. A measurement, not a test: nothing fails when a figure misses its aim.
 */
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { defaultDatabaseSettings, openDatabase } from '../src/db/connection.ts';
import { withDeadline } from '../src/db/deadline.ts';
import { DEFAULT_LOCK_RETRY } from '../src/db/lock-retry.ts';
import { defaultMigrationsDir, migrate } from '../src/db/migrations.ts';
import { searchChunks, type SearchFilters, type SearchRanking } from '../src/documents/chunk-search.ts';
import { backgroundMigrations, pendingBackgroundMigrations, runSlice, type BackgroundMigration } from '../src/jobs/background-migrations.ts';
import { createLogger } from '../src/logger.ts';
import { generateLargeData, type LargeData } from './large-data.ts';
import { startRealServer, type RealServer } from './pg-server.ts';
import { searchPlans, type PlanSummary } from './query-plan.ts';
import { percentile } from './statistics.ts';

/** application_name of the bench's own sessions: their locks are left out of the samples. */
const APP = 'migration-locks';
const PROBE_MS = 20;
const LOCK_SAMPLE_MS = 50;
const IDLE_MS = 5_000;
const LIMIT = 10;
const QUERIES = 200;
const WARMUP = 20;
const WARMUP_BUDGET_MS = 10_000;
const CASE_BUDGET_MS = 60_000;
const EXACT_QUERIES = 30;
/** The full-text ranking alone, to show its share of the hybrid's time. */
const FULLTEXT_QUERIES = 50;
const WORKSPACES = 10;
const BIG_SHARE = 0.55;
const REFERENCE_MAX_CHUNKS = 100_000;
const BACKFILL = 'chunk-text-hashes';
const MAX_SLICE_FAILURES = 20;
const PROGRESS_MS = 60_000;
/**
 * The backfill's time budget: it ran 10 minutes at 100 000 chunks and would take hours at
 * 1 000 000 (docs/benchmarks.md), so past the budget it stops and its total is extrapolated.
 */
const BACKFILL_MINUTES = 20;
const DAY_MS = 86_400_000;

export const MIGRATION_AIM = {
  /** A request waits at most one lock try of the runner (lock-retry.ts). */
  stallMs: DEFAULT_LOCK_RETRY.maxTimeoutMs,
  /** As bench/search.ts: the index path at most a quarter of the exact scan. */
  searchRatio: 0.25,
  filteredRatio: 2,
  /** Search p95 while the backfill runs, against idle (as api-latency.ts's ≤ 2). */
  backfillSearchRatio: 2,
};

const LOCK_MODES = ['AccessShareLock', 'RowShareLock', 'RowExclusiveLock', 'ShareUpdateExclusiveLock', 'ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock'];

const SHAPE_0014 = `
  alter table document_chunks drop column search_vector, drop column search_length;
  alter table document_chunks
    add column search_vector tsvector generated always as (to_tsvector(search_config, coalesce(search_text, text))) stored,
    add column search_length integer generated always as (length(to_tsvector(search_config, coalesce(search_text, text)))) stored;
  create index document_chunks_search_vector on document_chunks using gin (search_vector) with (fastupdate = off)`;
const SHAPE_0015 = `
  drop index document_chunks_embedding;
  create index document_chunks_embedding on document_chunks using hnsw (embedding vector_cosine_ops) with (m = 8)`;
/** The same graph the way docs/migrations.md asks: built beside the old one, which is then dropped, both CONCURRENTLY. */
const CONCURRENT_GRAPH = `create index concurrently if not exists document_chunks_embedding_rebuilt on document_chunks using hnsw (embedding vector_cosine_ops) with (m = 8);
drop index concurrently if exists document_chunks_embedding;
`;

export interface StepResult {
  step: string;
  ms: number;
  readStallMs: number;
  writeStallMs: number;
  /** The strongest lock other sessions were seen holding on document_chunks, and for how long in one stretch. */
  lock: string;
  lockMs: number;
  extrapolated?: string;
}

interface Latencies {
  p50: number;
  p95: number;
  count: number;
  /** Answers with fewer than LIMIT hits. */
  short: number;
  /** Searches that failed (the service's statement_timeout, DB_STATEMENT_TIMEOUT_MS). */
  failed: number;
}

export interface MigrationLocksResult {
  chunks: number;
  bigChunks: number;
  generateMs: number;
  /** large-data's build of the HNSW graph (no load running), the yardstick of the extrapolations. */
  graphBuildMs: number;
  search: { hybrid: Latencies; vector: Latencies; exact: Latencies; fulltext: Latencies; filtered: { name: string; latencies: Latencies }[]; plan: PlanSummary };
  idle: StepResult;
  steps: StepResult[];
  backfill: Backfill & { rows: number; batches: number; searchDuring: Latencies; before: TableSizes; after: TableSizes; nullsLeft: number };
}

interface TableSizes {
  heapMb: number;
  graphMb: number;
  totalMb: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function latencies(ms: number[], short = 0, failed = 0): Latencies {
  if (ms.length === 0) return { p50: NaN, p95: NaN, count: 0, short, failed };
  return { p50: percentile(ms, 50), p95: percentile(ms, 95), count: ms.length, short, failed };
}

/** Runs `body` every `intervalMs` (from when it was due, skipping what a stall missed) until stopped. */
function every(intervalMs: number, body: (due: number) => Promise<void>): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    let due = performance.now();
    while (running) {
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      await body(due);
      due = Math.max(due + intervalMs, performance.now());
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** One session sending `statement` every PROBE_MS; each answer's wait counted from when it was due. */
function startProbe(url: string, name: string, statement: (sql: postgres.Sql) => Promise<unknown>) {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: `${APP}-${name}` } });
  const samples: { due: number; end: number }[] = [];
  let errors = 0;
  const loop = every(PROBE_MS, async (due) => {
    try {
      await statement(sql);
      samples.push({ due, end: performance.now() });
    } catch {
      errors++;
    }
  });
  return {
    /** The longest wait of a probe that was waiting at some point within [from, to]. */
    longest(from: number, to: number): number {
      return Math.max(0, ...samples.filter((s) => s.end >= from && s.due <= to).map((s) => s.end - s.due));
    },
    /** Once a probe due at or after `at` has been answered: the probes waiting at `at` have all answered. */
    async settled(at: number): Promise<void> {
      while (!samples.some((s) => s.due >= at)) await sleep(PROBE_MS);
    },
    errors: () => errors,
    async stop() {
      await loop.stop();
      await sql.end({ timeout: 5 });
    },
  };
}

/** The locks other client sessions hold on document_chunks, sampled every LOCK_SAMPLE_MS. */
function startLockSampler(url: string, table: number) {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: `${APP}-locks` } });
  const samples: { at: number; modes: Set<string>; statement: { ms: number; query: string } | undefined }[] = [];
  const others = sql`a.backend_type = 'client backend' and a.application_name not like ${`${APP}%`}`;
  const loop = every(LOCK_SAMPLE_MS, async () => {
    const rows = await sql<{ mode: string }[]>`
      select distinct l.mode from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'relation' and l.database = (select oid from pg_database where datname = current_database())
        and l.relation = ${table}::oid and l.granted and ${others}`;
    // The oldest statement running in another session: which one a long stretch was.
    const [statement] = await sql<{ ms: number; query: string }[]>`
      select (extract(epoch from clock_timestamp() - a.query_start) * 1000)::float8 as ms, left(regexp_replace(a.query, '[[:space:]]+', ' ', 'g'), 100) as query
      from pg_stat_activity a where a.datname = current_database() and a.state = 'active' and ${others}
      order by a.query_start limit 1`;
    samples.push({ at: performance.now(), modes: new Set(rows.map((row) => row.mode)), statement });
  });
  return {
    /** The strongest mode seen within [from, to] and its longest stretch of consecutive samples. */
    strongest(from: number, to: number): { lock: string; lockMs: number } {
      const window = samples.filter((s) => s.at >= from && s.at <= to + LOCK_SAMPLE_MS);
      const mode = LOCK_MODES.findLast((m) => window.some((s) => s.modes.has(m)));
      if (!mode) return { lock: 'none seen', lockMs: 0 };
      let longest = 0;
      let first: number | null = null;
      for (const sample of window) {
        if (!sample.modes.has(mode)) first = null;
        else {
          first ??= sample.at;
          longest = Math.max(longest, sample.at - first + LOCK_SAMPLE_MS);
        }
      }
      return { lock: mode.replace(/Lock$/, ''), lockMs: longest };
    },
    /** The longest-running statement of another session seen within [from, to]. */
    longestStatement(from: number, to: number): string {
      const seen = samples.filter((s) => s.at >= from && s.at <= to + LOCK_SAMPLE_MS && s.statement).map((s) => s.statement!);
      const longest = seen.reduce<(typeof seen)[number] | undefined>((a, b) => (a && a.ms >= b.ms ? a : b), undefined);
      return longest ? `${ms(longest.ms)}: ${longest.query}` : 'none seen';
    },
    stop: () => loop.stop().then(() => sql.end({ timeout: 5 })),
  };
}

type Watch = { reader: ReturnType<typeof startProbe>; writer: ReturnType<typeof startProbe>; locks: ReturnType<typeof startLockSampler> };

async function measureStep(watch: Watch, step: string, run: () => Promise<unknown>): Promise<StepResult> {
  const from = performance.now();
  await run();
  const to = performance.now();
  await Promise.all([watch.reader.settled(to), watch.writer.settled(to)]);
  const result = { step, ms: to - from, readStallMs: watch.reader.longest(from, to), writeStallMs: watch.writer.longest(from, to), ...watch.locks.strongest(from, to) };
  console.log(`  ${step}: ${seconds(result.ms)}; lock ${result.lock} ${ms(result.lockMs)}; longest stall read ${ms(result.readStallMs)}, write ${ms(result.writeStallMs)} (${load()})`);
  console.log(`    longest statement seen: ${watch.locks.longestStatement(from, to)}`);
  return result;
}

/** A copy of sql/ holding the previous release's files only, and its last version. */
async function previousRelease(): Promise<{ dir: string; last: string }> {
  const { lastMigration } = JSON.parse(await readFile(new URL('../releases/previous.json', import.meta.url), 'utf8')) as { lastMigration: string };
  return { dir: await copyMigrations((version) => version <= lastMigration), last: lastMigration };
}

interface Backfill {
  /** False when the time budget ran out first (--backfill-minutes). */
  finished: boolean;
  slices: number;
  /** Slices that failed (a batch past its statement_timeout, ...): the worker's job retries them, and so does this. */
  failures: string[];
  /** Each batch's statement (fillChunkTextHashes), inside its transaction: how long it held its rows. */
  batchMs: { p50: number; max: number };
  /** Milliseconds of batch per row visited. */
  msPerRow: number;
}

/**
 * The background migration as the workers run it: slice after slice under the jobs' deadline
 * (compose.ts), each batch's statement timed. A failed slice is tried again, as its job's retries
 * and housekeeping would, up to MAX_SLICE_FAILURES; progress every PROGRESS_MS.
 */
async function runBackfill(sql: postgres.Sql, total: number, budgetMs: number): Promise<Backfill> {
  const batches: { ms: number; rows: number }[] = [];
  const known = backgroundMigrations.map((migration): BackgroundMigration => {
    if (migration.name !== BACKFILL) return migration;
    return {
      ...migration,
      async batch(tx, cursor, limit) {
        const started = performance.now();
        const done = await migration.batch(tx, cursor, limit);
        batches.push({ ms: performance.now() - started, rows: done.visited });
        return done;
      },
    };
  });
  const options = { sql, logger: createLogger('silent'), now: () => new Date() };
  const failures: string[] = [];
  const started = performance.now();
  let said = started;
  let slices = 0;
  let finished = false;
  await withDeadline(defaultDatabaseSettings.jobDeadlineMs, async () => {
    while (performance.now() - started < budgetMs) {
      let outcome: 'done' | 'busy' | 'more';
      try {
        outcome = await runSlice(BACKFILL, options, known);
      } catch (error) {
        failures.push(error instanceof Error ? error.message : String(error));
        console.log(`  backfill: a slice failed (${failures.length}): ${failures.at(-1)}`);
        if (failures.length >= MAX_SLICE_FAILURES) throw new Error(`${BACKFILL}: ${failures.length} slices failed; the last: ${failures.at(-1)}`, { cause: error });
        outcome = 'more';
      }
      slices++;
      if (outcome === 'done') {
        finished = true;
        return;
      }
      if (outcome === 'busy') await sleep(100);
      if (performance.now() - said >= PROGRESS_MS) {
        said = performance.now();
        const rows = batches.reduce((sum, batch) => sum + batch.rows, 0);
        console.log(`  backfill: ${rows} of ${total} rows, ${Math.round(rows / ((said - started) / 1000))}/s so far (${load()})`);
      }
    }
  });
  const times = batches.map((batch) => batch.ms);
  const rows = batches.reduce((sum, batch) => sum + batch.rows, 0);
  return {
    finished,
    slices,
    failures,
    batchMs: { p50: times.length ? percentile(times, 50) : NaN, max: Math.max(0, ...times) },
    msPerRow: times.reduce((sum, ms) => sum + ms, 0) / Math.max(rows, 1),
  };
}

/** sql/'s migration files whose version `keep` accepts. */
async function migrationNames(keep: (version: string) => boolean): Promise<string[]> {
  return (await readdir(fileURLToPath(defaultMigrationsDir))).filter((name) => /^\d{4}_.+\.sql$/.test(name) && keep(name.slice(0, 4))).sort();
}

async function copyMigrations(keep: (version: string) => boolean): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `${APP}-sql-`));
  for (const name of await migrationNames(keep)) await copyFile(join(fileURLToPath(defaultMigrationsDir), name), join(dir, name));
  return dir;
}

interface SearchSet {
  workspaceId: string;
  model: string;
  queries: { text: string; vector: number[] }[];
  documentIds: string[];
}

async function searchSet(sql: postgres.Sql, data: LargeData): Promise<SearchSet> {
  const workspaceId = data.workspaces[0]!.id;
  const count = QUERIES + WARMUP;
  const vectors = await sql<{ v: string }[]>`
    select embedding::text as v from document_chunks
    where id in (select id from document_chunks where workspace_id = ${workspaceId} order by random() limit ${count})`;
  const texts = data.queries(count);
  const documents = await sql<{ id: string }[]>`select id from documents where workspace_id = ${workspaceId} order by random() limit ${3 * count}`;
  return {
    workspaceId,
    model: data.model,
    queries: vectors.map((row, i) => ({ text: texts[i]!, vector: JSON.parse(row.v) as number[] })),
    documentIds: documents.map((row) => row.id),
  };
}

/** One search of the set's i-th query; hits -1 when it failed. */
async function search(sql: postgres.Sql, set: SearchSet, i: number, ranking: SearchRanking, filters?: SearchFilters): Promise<{ ms: number; hits: number }> {
  const { text, vector } = set.queries[i % set.queries.length]!;
  const started = performance.now();
  const hits = await searchChunks(sql, { workspaceId: set.workspaceId, model: set.model, text, vector, limit: LIMIT, ...(filters ? { filters } : {}) }, ranking).then(
    (found) => found.length,
    () => -1,
  );
  return { ms: performance.now() - started, hits };
}

/**
 * `count` searches after `warmup`, each part cut short by its time budget (WARMUP_BUDGET_MS,
 * CASE_BUDGET_MS): at a million chunks a search can take seconds.
 */
async function searches(
  sql: postgres.Sql,
  set: SearchSet,
  ranking: SearchRanking,
  { count, warmup, filtersOf }: { count: number; warmup: number; filtersOf?: (i: number) => SearchFilters },
): Promise<Latencies> {
  let i = 0;
  const warm = performance.now() + WARMUP_BUDGET_MS;
  for (; i < warmup && performance.now() < warm; i++) await search(sql, set, i, ranking, filtersOf?.(i));
  const end = performance.now() + CASE_BUDGET_MS;
  const times: number[] = [];
  let short = 0;
  let failed = 0;
  for (let n = 0; n < count && performance.now() < end; n++, i++) {
    const { ms, hits } = await search(sql, set, i, ranking, filtersOf?.(i));
    if (hits < 0) failed++;
    else times.push(ms);
    if (hits >= 0 && hits < LIMIT) short++;
  }
  return latencies(times, short, failed);
}

function filterCases(set: SearchSet): { name: string; filters: (i: number) => SearchFilters }[] {
  const now = Date.now();
  const range = (fromDays: number, toDays: number) => () => ({ createdAfter: new Date(now - fromDays * DAY_MS), createdBefore: new Date(now - toDays * DAY_MS) });
  return [
    { name: '3 documentIds', filters: (i) => ({ documentIds: [0, 1, 2].map((k) => set.documentIds[(3 * i + k) % set.documentIds.length]!) }) },
    { name: 'contentTypes text/html (3% of documents)', filters: () => ({ contentTypes: ['text/html'] }) },
    { name: 'contentTypes application/pdf (7%)', filters: () => ({ contentTypes: ['application/pdf'] }) },
    { name: 'created within 7 days (2%)', filters: range(100, 93) },
    { name: 'created within 30 days (8%)', filters: range(120, 90) },
  ];
}

async function tableSizes(sql: postgres.Sql): Promise<TableSizes> {
  const [row] = await sql<TableSizes[]>`
    select pg_relation_size('document_chunks') / 1048576.0 as "heapMb", pg_relation_size('document_chunks_embedding') / 1048576.0 as "graphMb",
           pg_total_relation_size('document_chunks') / 1048576.0 as "totalMb"`;
  return { heapMb: Number(row!.heapMb), graphMb: Number(row!.graphMb), totalMb: Number(row!.totalMb) };
}

export async function benchMigrationLocks(server: RealServer, chunks: number, options: { reference: boolean; backfillMinutes: number }): Promise<MigrationLocksResult> {
  const admin = postgres(server.url, { max: 1, onnotice: () => {} });
  const name = `bench_migration_locks_${chunks}`;
  await admin.unsafe(`create database ${name}`);
  await admin.end({ timeout: 5 });
  const url = `${server.url.slice(0, server.url.lastIndexOf('/'))}/${name}`;
  const previous = await previousRelease();
  const scratch = await mkdtemp(join(tmpdir(), `${APP}-`));
  const db = await openDatabase({ databaseUrl: url, dataDir: scratch });
  const setup = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: `${APP}-setup` } });
  // The searches get the service's statement_timeout: one that runs out is a failed search.
  const timeout = defaultDatabaseSettings.statementTimeoutMs;
  const searcher = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: `${APP}-search`, statement_timeout: timeout } });
  const exact = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: `${APP}-exact`, enable_indexscan: 'off', statement_timeout: 0 } });
  // The reference steps' session: plain SQL as the runner before 0016 sent it, no timeouts. Its locks are sampled.
  const reference = postgres(url, { max: 1, onnotice: () => {}, connection: { application_name: 'reference-steps' } });
  const cleanups: (() => Promise<unknown>)[] = [
    () => rm(previous.dir, { recursive: true, force: true }),
    () => rm(scratch, { recursive: true, force: true }),
    () => db.close(),
    ...[setup, searcher, exact, reference].map((sql) => () => sql.end({ timeout: 5 })),
  ];
  try {
    await migrate(db.sql, { dir: previous.dir });
    console.log(`  migrated to the previous release's ${previous.last}`);

    // 1. The chunks, without text hashes (as stored before 0013).
    await setup.unsafe(`
      create function migration_locks_no_text_hash() returns trigger language plpgsql as $$ begin new.text_hash := null; return new; end $$;
      create trigger migration_locks_no_text_hash before insert on document_chunks for each row execute function migration_locks_no_text_hash()`);
    const big = Math.round(chunks * BIG_SHARE);
    const small = Math.floor((chunks - big) / (WORKSPACES - 1));
    const sizes = [chunks - small * (WORKSPACES - 1), ...Array.from({ length: WORKSPACES - 1 }, () => small)];
    const generated = performance.now();
    // The graph of 1 000 000 chunks outgrows 1 GB of maintenance_work_mem and its build slows down a
    // lot (large-data.ts); 3 GB holds it, as docs/benchmarks.md's 1 000 000-chunk build had.
    const indexMemory = chunks > 300_000 ? '3GB' : '1GB';
    const data = await generateLargeData({ url, sizes, indexMemory, log: (line) => console.log(`  ${line}`) });
    const generateMs = performance.now() - generated;
    await setup.unsafe('drop trigger migration_locks_no_text_hash on document_chunks; drop function migration_locks_no_text_hash()');
    const graphBuildMs = data.phases.find((phase) => phase.phase === 'index document_chunks_embedding')?.ms ?? NaN;

    // 2. Search on the big workspace.
    const set = await searchSet(setup, data);
    const said = (what: string, l: Latencies) =>
      console.log(`  search ${sizes[0]} chunks, ${what}: p50 ${ms(l.p50)} p95 ${ms(l.p95)} (${l.count} queries${l.short ? `, ${l.short} short` : ''}${l.failed ? `, ${l.failed} failed` : ''}; ${load()})`);
    const { vector: planVector } = set.queries[0]!;
    const plans = await searchPlans(setup, { workspaceId: set.workspaceId, model: set.model, vector: planVector, limit: LIMIT });
    console.log(`  the vector ranking's plan: ${plans.custom.nodes}`);
    const hybrid = await searches(searcher, set, 'hybrid', { count: QUERIES, warmup: WARMUP });
    said('hybrid', hybrid);
    const vector = await searches(searcher, set, 'vector', { count: QUERIES, warmup: WARMUP });
    said('vector ranking', vector);
    const exactRuns = await searches(exact, set, 'vector', { count: EXACT_QUERIES, warmup: 3 });
    said('vector ranking, exact scan', exactRuns);
    const fulltext = await searches(searcher, set, 'fulltext', { count: FULLTEXT_QUERIES, warmup: 5 });
    said('full-text ranking', fulltext);
    const filtered = [];
    for (const { name: filterName, filters } of filterCases(set)) {
      const result = await searches(searcher, set, 'hybrid', { count: QUERIES, warmup: WARMUP, filtersOf: filters });
      said(`hybrid, ${filterName}`, result);
      filtered.push({ name: filterName, latencies: result });
    }

    // 3. The steps, with the probes running.
    const [read] = await setup<{ id: string }[]>`select id from document_chunks where workspace_id = ${set.workspaceId} limit 1`;
    const [written] = await setup<{ id: string }[]>`select id from document_chunks where workspace_id = ${data.workspaces.at(-1)!.id} limit 1`;
    const [table] = await setup<{ oid: number }[]>`select 'document_chunks'::regclass::oid::int as oid`;
    const watch: Watch = {
      reader: startProbe(url, 'read', (sql) => sql`select id, document_id, index, text from document_chunks where id = ${read!.id}`),
      writer: startProbe(url, 'write', (sql) => sql`update document_chunks set start_offset = start_offset where id = ${written!.id}`),
      locks: startLockSampler(url, table!.oid),
    };
    cleanups.unshift(
      () => watch.reader.stop(),
      () => watch.writer.stop(),
      () => watch.locks.stop(),
    );
    // Connected and answering before the baseline (a probe's first answer includes its connection).
    const connected = performance.now();
    await Promise.all([watch.reader.settled(connected), watch.writer.settled(connected)]);
    const idle = await measureStep(watch, 'idle (baseline)', () => sleep(IDLE_MS));
    const steps: StepResult[] = [];
    steps.push(await measureStep(watch, `(a) migrate: ${(await migrationNames((v) => v > previous.last)).join(', ')}`, () => migrate(db.sql)));

    await pendingBackgroundMigrations(db.sql, new Date());
    const before = await tableSizes(setup);
    let backfill: Backfill | undefined;
    let searching = true;
    const during: number[] = [];
    let duringFailed = 0;
    const searchLoop = (async () => {
      for (let i = 0; searching; i++) {
        const { ms: took, hits } = await search(searcher, set, i, 'hybrid');
        if (hits >= 0) during.push(took);
        else duringFailed++;
      }
    })();
    try {
      steps.push(
        await measureStep(watch, `(b) background migration ${BACKFILL}, every chunk`, async () => {
          backfill = await runBackfill(db.sql, chunks, options.backfillMinutes * 60_000);
        }),
      );
    } finally {
      searching = false;
      await searchLoop;
    }
    const after = await tableSizes(setup);
    const [progress] = await setup<{ rows: number; batches: number }[]>`select rows_done::float8 as rows, batches from background_migrations where name = ${BACKFILL}`;
    const [left] = await setup<{ n: number }[]>`select count(*)::int as n from document_chunks where text_hash is null`;
    steps.push(await measureStep(watch, '(b) then VACUUM (ANALYZE) document_chunks, as autovacuum would', () => reference.unsafe('vacuum (analyze) document_chunks')));

    if (options.reference || chunks <= REFERENCE_MAX_CHUNKS) {
      steps.push(await measureStep(watch, '(c) 0014 shape: drop and re-add the generated columns', () => reference.begin((tx) => tx.unsafe(SHAPE_0014))));
      steps.push(await measureStep(watch, '(c) 0015 shape: drop and build the HNSW graph', () => reference.begin((tx) => tx.unsafe(SHAPE_0015))));
      const dir = await copyMigrations(() => true);
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      await writeFile(join(dir, '9990_bench_concurrent_graph.sql'), CONCURRENT_GRAPH);
      steps.push(await measureStep(watch, '(c) the same graph CONCURRENTLY, through the runner', () => migrate(db.sql, { dir })));
    }
    if (watch.reader.errors() + watch.writer.errors() > 0) console.log(`  probe errors: read ${watch.reader.errors()}, write ${watch.writer.errors()}`);
    return {
      chunks,
      bigChunks: sizes[0]!,
      generateMs,
      graphBuildMs,
      search: { hybrid, vector, exact: exactRuns, fulltext, filtered, plan: plans.custom },
      idle,
      steps,
      backfill: { ...backfill!, rows: progress?.rows ?? 0, batches: progress?.batches ?? 0, searchDuring: latencies(during, 0, duringFailed), before, after, nullsLeft: left!.n },
    };
  } finally {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  }
}

/** The reference steps at a larger size, from a smaller size of the same run (their measured rows). */
export function extrapolate(measured: MigrationLocksResult, target: MigrationLocksResult): StepResult[] {
  const linear = target.chunks / measured.chunks;
  const graph = target.graphBuildMs / measured.graphBuildMs;
  return measured.steps
    .filter((step) => step.step.startsWith('(c)'))
    .map((step) => {
      const concurrent = step.step.includes('CONCURRENTLY');
      const factor = step.step.includes('0014') ? linear : graph;
      const scaled = (value: number) => (value >= step.ms * 0.5 ? value * factor : value);
      return {
        ...step,
        ms: step.ms * factor,
        // A lock held for the whole step stalls for the whole step; a concurrent build's stalls do not grow with it.
        readStallMs: concurrent ? step.readStallMs : scaled(step.readStallMs),
        writeStallMs: concurrent ? step.writeStallMs : scaled(step.writeStallMs),
        lockMs: scaled(step.lockMs),
        extrapolated: `× ${factor.toFixed(1)} of ${measured.chunks}: ${step.step.includes('0014') ? 'rows' : "large-data's graph builds"}`,
      };
    });
}

const ms = (value: number) => (value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${value.toFixed(value < 10 ? 1 : 0)} ms`);
/** The machine's load: other work on its two cores moves every figure. */
const load = () => `load average ${loadavg()[0]!.toFixed(1)}`;
const seconds = (value: number) => `${(value / 1000).toFixed(1)} s`;
const ratio = (a: number, b: number) => (a / b).toFixed(2);

/** The table of steps: time, lock, longest stalls. */
export function stepTable(result: MigrationLocksResult, extrapolated: StepResult[] = []): string[][] {
  return [['step', 'time', 'lock on document_chunks (longest seen)', 'longest read stall', 'longest write stall'], ...[result.idle, ...result.steps, ...extrapolated].map(stepRow)];
}

function stepRow(step: StepResult): string[] {
  const mark = step.extrapolated ? ` [extrapolated, ${step.extrapolated}]` : '';
  return [`${step.step}${mark}`, seconds(step.ms), step.lockMs > 0 ? `${step.lock}, ${ms(step.lockMs)}` : step.lock, ms(step.readStallMs), ms(step.writeStallMs)];
}

/** Rows of figure, baseline, ratio and aim, as bench/index.ts prints them. */
export function migrationLockRows(result: MigrationLocksResult): string[][] {
  const k = `${Math.round(result.chunks / 1000)}k`;
  const { hybrid, vector, exact, fulltext, filtered } = result.search;
  const failed = (l: Latencies) => (l.failed ? `; ${l.failed} failed` : '');
  const stall = (step: StepResult) => Math.max(step.readStallMs, step.writeStallMs);
  const mine = result.steps.filter((step) => step.step.startsWith('(a)') || step.step.includes('background migration'));
  const backfill = result.steps.find((step) => step.step.includes('background migration'))!;
  const { before, after, searchDuring } = result.backfill;
  return [
    [
      `search ${k} (big workspace ${result.bigChunks}) vector ranking p95 HNSW / exact`,
      `${ratio(vector.p95, exact.p95)}  (${ms(vector.p95)} / ${ms(exact.p95)}; p50 ${ms(vector.p50)} / ${ms(exact.p50)}; ${vector.count} / ${exact.count} queries${failed(vector)})`,
      `<= ${MIGRATION_AIM.searchRatio}`,
    ],
    [`  the vector ranking's plan uses HNSW`, `${result.search.plan.hnsw ? 'yes' : 'no'}  (${result.search.plan.nodes})`, 'yes'],
    [
      '  hybrid (documents.search) p95 / vector ranking alone',
      `${ratio(hybrid.p95, vector.p95)}  (${ms(hybrid.p95)} / ${ms(vector.p95)}; p50 ${ms(hybrid.p50)}; full text alone p50 ${ms(fulltext.p50)} p95 ${ms(fulltext.p95)}${failed(hybrid)})`,
      '',
    ],
    ...filtered.map(({ name, latencies: f }) => [
      `  hybrid, ${name}: p95 / unfiltered`,
      `${ratio(f.p95, hybrid.p95)}  (${ms(f.p95)} / ${ms(hybrid.p95)}; p50 ${ms(f.p50)}${f.short ? `; ${f.short} short answers` : ''}${failed(f)})`,
      `<= ${MIGRATION_AIM.filteredRatio}`,
    ]),
    ...mine.map((step) => [
      `${step.step.replace(/^\(.\) /, '').replace(/, every chunk$/, '')}: longest stall read / write`,
      `${ms(step.readStallMs)} / ${ms(step.writeStallMs)}  (idle ${ms(result.idle.readStallMs)} / ${ms(result.idle.writeStallMs)}; ${seconds(step.ms)}; lock ${step.lock})`,
      `<= ${MIGRATION_AIM.stallMs} ms`,
    ]),
    [
      `  backfill ${result.backfill.rows} rows: rows/s`,
      `${Math.round(result.backfill.rows / (backfill.ms / 1000))}  (${seconds(backfill.ms)}, ${result.backfill.slices} slices of ${result.backfill.batches} batches, ${result.backfill.failures.length} slices failed, ${result.backfill.nullsLeft} hashes left; longest stall / idle's ${ratio(stall(backfill), stall(result.idle))})`,
      '',
    ],
    ...(result.backfill.finished
      ? []
      : [
          [
            '  backfill stopped at its time budget; every chunk would take',
            `${(result.chunks / (result.backfill.rows / (backfill.ms / 1000)) / 60).toFixed(0)} min  (extrapolated from ${result.backfill.rows} rows in ${seconds(backfill.ms)})`,
            '',
          ],
        ]),
    [
      '  backfill batch: p50 / longest; per row',
      `${ms(result.backfill.batchMs.p50)} / ${ms(result.backfill.batchMs.max)}; ${result.backfill.msPerRow.toFixed(2)} ms per row (a batch pauses as long as it took)`,
      '',
    ],
    [
      '  search p95 during the backfill / idle',
      `${ratio(searchDuring.p95, hybrid.p95)}  (${ms(searchDuring.p95)} / ${ms(hybrid.p95)}; p50 ${ms(searchDuring.p50)}; ${searchDuring.count} searches${failed(searchDuring)})`,
      `<= ${MIGRATION_AIM.backfillSearchRatio}`,
    ],
    [
      '  heap / HNSW / all, MB before → after the backfill',
      `${before.heapMb.toFixed(0)} / ${before.graphMb.toFixed(0)} / ${before.totalMb.toFixed(0)} → ${after.heapMb.toFixed(0)} / ${after.graphMb.toFixed(0)} / ${after.totalMb.toFixed(0)}`,
      '',
    ],
    [`  generated ${k} chunks (large-data), of which the HNSW build`, `${seconds(result.generateMs)}, ${seconds(result.graphBuildMs)}`, ''],
  ];
}

function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  for (const row of rows)
    console.log(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { chunks: { type: 'string' }, reference: { type: 'boolean', default: false }, 'backfill-minutes': { type: 'string', default: String(BACKFILL_MINUTES) } } });
  const backfillMinutes = Number(values['backfill-minutes']);
  const sizes = values.chunks ? values.chunks.split(',').map(Number) : [100_000, ...(process.env.BENCH_LARGE === '1' ? [1_000_000] : [])];
  if (sizes.some((n) => !Number.isInteger(n) || n < 1_000) || !(backfillMinutes > 0)) {
    console.error(
      `usage: node bench/migration-locks.ts [--chunks N[,N...]] [--reference] [--backfill-minutes M]   (N ≥ 1000; default 100000, and 1000000 with BENCH_LARGE=1; M default ${BACKFILL_MINUTES})`,
    );
    process.exit(2);
  }
  const started = performance.now();
  console.log(`Node ${process.version}, ${availableParallelism()} CPUs; ${new Date().toISOString()}`);
  const results: MigrationLocksResult[] = [];
  for (const chunks of sizes.sort((a, b) => a - b)) {
    // A server of its own per size: the smaller run's pages leave the shared buffers to the larger one.
    const real = await startRealServer();
    if (real.skipped !== undefined) {
      console.log(`migration locks, ${chunks} chunks: skipped: ${real.skipped}`);
      continue;
    }
    try {
      console.log(`migration locks, ${chunks} chunks, on ${real.server.version}:`);
      const result = await benchMigrationLocks(real.server, chunks, { reference: values.reference, backfillMinutes });
      results.push(result);
      const smaller = results.find((r) => r.chunks < chunks && r.steps.some((step) => step.step.startsWith('(c)')));
      const extrapolated = result.steps.some((step) => step.step.startsWith('(c)')) || !smaller ? [] : extrapolate(smaller, result);
      console.log();
      printTable(stepTable(result, extrapolated));
      console.log();
      printTable([['measure', 'result', 'aim'], ...migrationLockRows(result)]);
      console.log();
    } finally {
      await real.server.stop();
    }
  }
  console.log(`(${((performance.now() - started) / 1000).toFixed(0)} s)`);
}

if (import.meta.main) {
  await main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}

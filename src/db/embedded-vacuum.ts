/**
 * VACUUM and ANALYZE for the embedded database, which runs PostgreSQL in single-user mode without
 * the autovacuum launcher (`autovacuum` says `on`, and nothing ever runs). Without it the rows
 * every delete and update leaves behind stay for good: pg-boss's finished jobs, each re-index's
 * previous chunk generation with its HNSW and GIN entries, deleted documents, expired sessions;
 * and nothing runs ANALYZE, so the planner has only what a table's size says. A count over 200 000
 * deleted rows took 4 ms, 1.2 ms once vacuumed (docs/benchmarks.md, session 33).
 *
 * The job worker's housekeeping calls this on the embedded database (jobs/housekeeping.ts), with
 * autovacuum's own default thresholds: a table is vacuumed (and analysed) once its dead rows pass
 * 50 + 20% of its live ones, analysed alone once the rows changed since the last analysis pass
 * 50 + 10%. On the one connection a VACUUM holds every request while it runs, so each table waits
 * for a moment without requests in flight first (the request gate, as a job's statements do), and the
 * thresholds keep it rare. A table with an HNSW index (document_chunks) is vacuumed without index
 * cleanup: pgvector's HNSW vacuum walks the whole graph, and on PGlite it held the connection 6.7 s
 * for a table of 10 000 chunks (a quarter deleted), against 155 ms without it; the rows' space is
 * reclaimed all the same, while the graph keeps its deleted entries (search skips them). Those
 * rows stay counted as dead, so such a table is vacuumed again only once its dead rows have grown
 * past the threshold since its last pass here. A database server has autovacuum: this is never
 * called there.
 */
import type { Sql } from './connection.ts';
import type { RequestGate } from './request-gate.ts';

export interface TableMaintenance {
  /** Schema-qualified and quoted, as the statement named it. */
  table: string;
  /** `vacuum` includes analyze; `vacuum-heap` is a vacuum without index cleanup (a table with an HNSW index). */
  action: 'vacuum' | 'vacuum-heap' | 'analyze';
  ms: number;
}

/** autovacuum_vacuum_threshold, autovacuum_vacuum_scale_factor, and the same for analyze: PostgreSQL's defaults. */
const VACUUM_THRESHOLD = 50;
const VACUUM_SCALE = 0.2;
const ANALYZE_THRESHOLD = 50;
const ANALYZE_SCALE = 0.1;

/** Per database: a table with an HNSW index → its dead rows after its last vacuum without index cleanup. */
const deadLeftBehind = new WeakMap<Sql, Map<string, number>>();

/** Vacuums and analyses the tables past autovacuum's thresholds, one at a time, each after the API's requests in flight. */
export async function vacuumWhereNeeded(sql: Sql, requests: RequestGate): Promise<TableMaintenance[]> {
  // float8 parameters: next to n_live_tup (bigint) PostgreSQL would take 0.2 for a bigint. "analyze"
  // is a reserved word, quoted where it names the column.
  const tables = await sql<{ table: string; dead: number; live: number; vacuum: boolean; analyze: boolean; hnsw: boolean }[]>`
    select * from (
      select format('%I.%I', schemaname, relname) as table, n_dead_tup::float8 as dead, n_live_tup::float8 as live,
             n_dead_tup > ${VACUUM_THRESHOLD}::float8 + ${VACUUM_SCALE}::float8 * n_live_tup as vacuum,
             n_mod_since_analyze > ${ANALYZE_THRESHOLD}::float8 + ${ANALYZE_SCALE}::float8 * n_live_tup as "analyze",
             exists (select 1 from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam
                     where i.indrelid = s.relid and am.amname = 'hnsw') as hnsw
      from pg_stat_user_tables s
    ) tables
    where vacuum or "analyze"
    order by dead desc, 1`;
  const leftBehind = deadLeftBehind.get(sql) ?? new Map<string, number>();
  deadLeftBehind.set(sql, leftBehind);
  const done: TableMaintenance[] = [];
  for (const { table, dead, live, vacuum, analyze, hnsw } of tables) {
    const action = actionFor({ vacuum, analyze, hnsw, grown: dead - (leftBehind.get(table) ?? 0) > VACUUM_THRESHOLD + VACUUM_SCALE * live });
    if (!action) continue;
    await requests.waitForIdle();
    const started = performance.now();
    // The name comes from the catalog, quoted by format('%I'): VACUUM takes no parameters.
    await sql.unsafe({ vacuum: `vacuum (analyze) ${table}`, 'vacuum-heap': `vacuum (index_cleanup off, analyze) ${table}`, analyze: `analyze ${table}` }[action]);
    done.push({ table, action, ms: Math.round(performance.now() - started) });
    if (action === 'vacuum-heap') leftBehind.set(table, dead);
  }
  return done;
}

/** What a table past a threshold gets; null when its dead rows are the ones a vacuum without index cleanup left. */
function actionFor(table: { vacuum: boolean; analyze: boolean; hnsw: boolean; grown: boolean }): TableMaintenance['action'] | null {
  if (table.vacuum && !table.hnsw) return 'vacuum';
  if (table.vacuum && table.grown) return 'vacuum-heap';
  return table.analyze ? 'analyze' : null;
}

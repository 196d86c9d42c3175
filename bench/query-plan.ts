/**
 * What plan the vector ranking of searchChunks gets (chunk-search.ts, `ranking: 'vector'`),
 * checked on the statement it really sends: searchChunks runs once against a recorder that keeps
 * its statements (a settings one, the ranking, then the describe statement that reads the hits),
 * then the ranking is PREPAREd on the database and EXPLAINed through EXECUTE with the same
 * parameters, both as a custom plan (the values known) and as a generic one (what PostgreSQL
 * may switch to after five executions on a connection, unless plan_cache_mode says otherwise).
 */
import type { Sql } from '../src/db/connection.ts';
import type { Db } from '../src/db/db.ts';
import { searchChunks, type SearchQuery } from '../src/documents/chunk-search.ts';

interface Statement {
  strings: TemplateStringsArray;
  values: unknown[];
}

export interface PlanSummary {
  /** The plan's nodes in pre-order, e.g. "Limit > Index Scan using document_chunks_embedding". */
  nodes: string;
  /** Whether the HNSW index serves it. */
  hnsw: boolean;
}

export interface SearchPlans {
  custom: PlanSummary;
  generic: PlanSummary;
}

/** What the benches search: a workspace's chunks of one model, by a vector. */
export type VectorQuery = Omit<SearchQuery, 'text'>;

/** searchChunks on `sql`, ranked by the vector alone (the text is not read by that ranking). */
export function vectorSearch(sql: Sql, query: VectorQuery): Promise<{ chunkId: string }[]> {
  return searchChunks(sql, { ...query, text: '' }, 'vector');
}

/**
 * A stand-in Sql whose transaction hands each statement to `send` (its index in the sequence, the
 * statement). A tagged call that is not awaited is a fragment of another statement (chunk-search.ts
 * writes its filter conditions so): it is sent only as part of the statement that holds it, its
 * text and values spliced in where it stands.
 */
function intercepting(send: (index: number, statement: Statement) => Promise<unknown>): Sql {
  let index = 0;
  const tx = (strings: TemplateStringsArray, ...values: unknown[]) => new Pending(flatten(strings, values), send, () => index++);
  return { begin: async (run: (tx: unknown) => unknown) => run(tx) } as unknown as Sql;
}

/** A recorded tagged call: a statement once awaited, or a fragment inside another one. */
class Pending implements PromiseLike<unknown> {
  readonly statement: Statement;
  private readonly send: (index: number, statement: Statement) => Promise<unknown>;
  private readonly next: () => number;
  constructor(statement: Statement, send: (index: number, statement: Statement) => Promise<unknown>, next: () => number) {
    this.statement = statement;
    this.send = send;
    this.next = next;
  }
  then<A = unknown, B = never>(resolve?: ((value: unknown) => A | PromiseLike<A>) | null, reject?: ((reason: unknown) => B | PromiseLike<B>) | null): PromiseLike<A | B> {
    return this.send(this.next(), this.statement).then(resolve, reject);
  }
}

/** The statement with its fragments' text and values spliced in. */
function flatten(strings: TemplateStringsArray, values: unknown[]): Statement {
  const parts = [strings[0]!];
  const flat: unknown[] = [];
  values.forEach((value, i) => {
    if (value instanceof Pending) {
      const inner = value.statement;
      parts[parts.length - 1] += inner.strings[0]!;
      inner.values.forEach((innerValue, j) => {
        flat.push(innerValue);
        parts.push(inner.strings[j + 1]!);
      });
      parts[parts.length - 1] += strings[i + 1]!;
    } else {
      flat.push(value);
      parts.push(strings[i + 1]!);
    }
  });
  return { strings: Object.assign([...parts], { raw: [...parts] }), values: flat };
}

/**
 * The statements of one vector search: the settings (one value, hnsw.ef_search), the ranking, and
 * the describe statement (the recorder answers one ranked row so that it is sent).
 */
async function recordSearch(query: VectorQuery): Promise<[Statement, Statement, Statement]> {
  const statements: Statement[] = [];
  await vectorSearch(
    intercepting(async (index, statement) => {
      statements.push(statement);
      return index === 1 ? [{ id: 'chk_recorded', score: 1 }] : [];
    }),
    query,
  );
  const [settings, ranking, describe] = statements;
  if (statements.length !== 3 || settings!.values.length !== 1 || !ranking!.strings.join('').includes('<=>')) {
    throw new Error(`searchChunks(…, 'vector') sent ${statements.length} statements; the plan check expects a settings one (hnsw.ef_search), the ranking and the describe one: update bench/query-plan.ts`);
  }
  return [settings!, ranking!, describe!];
}

/**
 * searchChunks' own vector search, changed in one respect: hnsw.ef_search set to `efSearch`
 * instead of what it picks (its settings statement sent with that value). How recall and latency
 * would move.
 */
export async function searchVariant(sql: Sql, query: VectorQuery, variant: { efSearch: number }): Promise<{ chunkId: string }[]> {
  return sql.begin(async (tx) => {
    const rewritten = intercepting((index, { strings, values }) => (tx as Db)(strings, ...((index === 0 ? [String(variant.efSearch)] : values) as never[])));
    return vectorSearch(rewritten, query);
  });
}

/** The plans of the vector ranking; `indexScans: false` plans it as the exact path does. */
export async function searchPlans(sql: Sql, query: VectorQuery, { indexScans = true } = {}): Promise<SearchPlans> {
  const [settings, ranking] = await recordSearch(query);
  const text = ranking.strings.reduce((sqlText, part, i) => `${sqlText}$${i}${part}`);
  return sql.begin(async (tx) => {
    if (!indexScans) await tx`set local enable_indexscan = off`;
    await tx(settings.strings, ...(settings.values as never[]));
    await tx.unsafe(`prepare bench_search as ${text}`);
    // EXPLAIN is a utility statement: the server does not type parameters inside it, so
    // EXECUTE's arguments go in as literals of the prepared statement's parameter types.
    const [prepared] = await tx<{ types: string[] }[]>`select parameter_types::text[] as types from pg_prepared_statements where name = 'bench_search'`;
    const args = prepared!.types.map((type, i) => `'${String(ranking.values[i]).replaceAll("'", "''")}'::${type}`).join(', ');
    const explain = async (mode: string) => {
      await tx.unsafe(`set local plan_cache_mode = ${mode}`);
      const [row] = await tx.unsafe(`explain (format json) execute bench_search(${args})`);
      return summarise((row as unknown as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
    };
    const plans = { custom: await explain('force_custom_plan'), generic: await explain('force_generic_plan') };
    await tx.unsafe('deallocate bench_search');
    return plans;
  });
}

/**
 * How the server planned the ranking statement on one connection so far (pg_prepared_statements,
 * PostgreSQL 14+): postgres.js prepares every statement, and after five executions PostgreSQL may
 * switch a statement to its generic plan (searchChunks sets plan_cache_mode so that it does not).
 */
export async function planCacheUse(sql: Sql): Promise<{ custom: number; generic: number }> {
  const [row] = await sql<{ custom: number; generic: number }[]>`
    select coalesce(sum(custom_plans), 0)::int as custom, coalesce(sum(generic_plans), 0)::int as generic
    from pg_prepared_statements
    where statement like '%from document_chunks%' and statement like '%<=>%' and statement not like '%pg_prepared_statements%'`;
  return row!;
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function summarise(plan: PlanNode): PlanSummary {
  const nodes: string[] = [];
  let hnsw = false;
  const visit = (node: PlanNode) => {
    const on = node['Index Name'] ? ` using ${node['Index Name']}` : node['Relation Name'] ? ` on ${node['Relation Name']}` : '';
    nodes.push(`${node['Node Type']}${on}`);
    if (node['Index Name'] === 'document_chunks_embedding') hnsw = true;
    node.Plans?.forEach(visit);
  };
  visit(plan);
  return { nodes: nodes.join(' > '), hnsw };
}

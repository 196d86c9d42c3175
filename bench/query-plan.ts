/**
 * What plan searchChunks gets, checked on the statement it really sends: searchChunks runs once
 * against a recorder that keeps its statements, then the search statement is PREPAREd on the
 * database and EXPLAINed through EXECUTE with the same parameters, both as a custom plan (the
 * values known, as in postgres.js's first executions of a prepared statement) and as a generic one
 * (what PostgreSQL may switch to after five executions on a connection).
 */
import type { Sql } from '../src/db/connection.ts';
import { searchChunks } from '../src/documents/text-store.ts';

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

async function recordSearch(workspaceId: string, vector: number[], limit: number): Promise<Statement[]> {
  const statements: Statement[] = [];
  const tx = (strings: TemplateStringsArray, ...values: unknown[]) => {
    statements.push({ strings, values });
    return Promise.resolve([]);
  };
  await searchChunks({ begin: async (run: (tx: unknown) => unknown) => run(tx) } as unknown as Sql, workspaceId, vector, limit);
  if (statements.length !== 2) throw new Error(`searchChunks sent ${statements.length} statements; the plan check expects a settings one and the search`);
  return statements;
}

/**
 * searchChunks' own statements, changed in one respect: hnsw.ef_search set to `efSearch` instead of
 * what it picks, and/or `plan_cache_mode = force_custom_plan` for the transaction (PostgreSQL then
 * never runs the statement with its generic plan). How recall and latency would move.
 */
export async function searchVariant(sql: Sql, workspaceId: string, vector: number[], limit: number, variant: { efSearch?: number; customPlan?: boolean }): Promise<{ chunkId: string }[]> {
  const [settings, search] = await recordSearch(workspaceId, vector, limit);
  if (settings!.values.length !== 1) throw new Error('the settings statement of searchChunks has changed; update searchVariant');
  return sql.begin(async (tx) => {
    if (variant.customPlan) await tx`set local plan_cache_mode = force_custom_plan`;
    await tx(settings!.strings, ...(variant.efSearch ? [String(variant.efSearch)] : (settings!.values as never[])));
    return tx(search!.strings, ...(search!.values as never[]));
  }) as Promise<{ chunkId: string }[]>;
}

/** The plans of searchChunks(workspaceId, vector, limit); `indexScans: false` plans it as the exact path does. */
export async function searchPlans(sql: Sql, workspaceId: string, vector: number[], limit: number, { indexScans = true } = {}): Promise<SearchPlans> {
  const [settings, search] = await recordSearch(workspaceId, vector, limit);
  const text = search!.strings.reduce((sqlText, part, i) => `${sqlText}$${i}${part}`);
  return sql.begin(async (tx) => {
    if (!indexScans) await tx`set local enable_indexscan = off`;
    await tx(settings!.strings, ...(settings!.values as never[]));
    await tx.unsafe(`prepare bench_search as ${text}`);
    // EXPLAIN is a utility statement: the server does not type parameters inside it, so
    // EXECUTE's arguments go in as literals of the prepared statement's parameter types.
    const [prepared] = await tx<{ types: string[] }[]>`select parameter_types::text[] as types from pg_prepared_statements where name = 'bench_search'`;
    const args = prepared!.types.map((type, i) => `'${String(search!.values[i]).replaceAll("'", "''")}'::${type}`).join(', ');
    const explain = async (mode: string) => {
      await tx.unsafe(`set local plan_cache_mode = ${mode}`);
      const [row] = await tx.unsafe(`explain (format json) execute bench_search(${args})`);
      return summarise((row as unknown as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
    };
    const plans = { custom: await explain('force_custom_plan'), generic: await explain('force_generic_plan') };
    await tx.unsafe('deallocate bench_search');
    return plans;
  }) as Promise<SearchPlans>;
}

/**
 * How the server planned the search statement on one connection so far (pg_prepared_statements,
 * PostgreSQL 14+): postgres.js prepares every statement, and after five executions PostgreSQL may
 * switch a statement to its generic plan.
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

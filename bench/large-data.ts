/**
 * A large data set on a migrated PostgreSQL database, in minutes (issue 37, item 5): N document
 * chunks with embeddings across M workspaces, as the service itself would have stored them, so that
 * documents.search, documents.list and documents.text work on them through the real API.
 *
 *   node bench/large-data.ts --url postgres://... --chunks 100000 --workspaces 10
 *        [--organization-of <user email or id>] [--sizes 100000,2000,2000] [--seed 37] [--name large]
 *        [--generation per-document|zero] [--index-memory 1GB]
 *
 * What it writes, per workspace (bench/large-data-corpus.ts for the words and vectors):
 * - documents, `ready` and indexed (indexedAt, chunkCount, chunk_generation from the
 *   document_chunk_generation sequence as indexing takes it), of four media types, created over the
 *   last year, about 20 chunks each; their extracted texts (document_texts: characters, pages,
 *   chunks, page starts, headings, language `eng`) and text_bytes;
 * - their chunks, cut and placed by the service's own chunker (offsets, pages, heading paths),
 *   of the embedding model the AI service answers with (LOCAL_EMBEDDING_MODEL) and its
 *   dimensions (EMBEDDING_DIMENSIONS, checked against the column), text_hash as indexing hashes,
 *   generation = the document's chunk_generation, search_config `english` (what the documents'
 *   language `eng` picks, documents/text-search-config.ts).
 * Generations: by default each document has its own, as every document.index since
 * 0013_chunk_citations.sql leaves it; `--generation zero` gives them all generation 0, as documents
 * indexed before 0013 have it. The two are real states of a deployment and the planner sees them
 * differently (join estimates of `d.chunk_generation = c.generation`).
 * The organization is the one the user of `--organization-of` owns (so that user's session
 * searches them), or a new one nobody is a member of. No bytes are stored for the documents:
 * documents.downloadUrl answers an address of nothing.
 *
 * Fast path: document_chunks' secondary indexes (all but the primary key and unique constraint)
 * are dropped, their definitions read from pg_indexes first and printed, and always built again at
 * the end (even after a failure), the HNSW graph first with `--index-memory` of
 * maintenance_work_mem (1GB fits 100 000 chunks; give 1 000 000 about 3GB, or pgvector says the
 * graph no longer fits and the build slows down), then ANALYZE. The rows go in batch by batch, the
 * chunks by binary COPY on two connections at once (large-data-rows.ts). Meant for a database that
 * is not serving yet: dropping the indexes takes document_chunks' exclusive lock, and searches
 * without them are slow.
 */
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL } from '../src/ai-service/protocol.ts';
import { textSearchConfig } from '../src/documents/text-search-config.ts';
import { newId } from '../src/ids.ts';
import { Corpus, generator } from './large-data-corpus.ts';
import { CHUNK_COLUMNS, COPY_LANES, LANGUAGE, loadRows, quoteIdentifier, type LargeDataWorkspace } from './large-data-rows.ts';

export type { LargeDataWorkspace } from './large-data-rows.ts';

export interface LargeDataOptions {
  url: string;
  /** Chunks of each workspace to create, in order. */
  sizes: number[];
  /** A user's email or id: the workspaces go into the organization that user owns (the oldest, if several). */
  organizationOf?: string | undefined;
  seed?: number | undefined;
  /** `per-document` (default: each document its own, from the sequence) or `zero` (all 0, as indexed before 0013). */
  generation?: 'per-document' | 'zero' | undefined;
  /** maintenance_work_mem of the index builds (default 1GB: an HNSW graph of 100 000 chunks fits; more chunks want more). */
  indexMemory?: string | undefined;
  /** Names and slugs of the workspaces start with it (default `large`). */
  name?: string | undefined;
  /** Progress and timings, a line at a time (default: console.log). */
  log?: ((line: string) => void) | undefined;
}

export interface LargeData {
  organizationId: string;
  /** The owner found by `organizationOf`, or null for a new organization. */
  userId: string | null;
  model: string;
  dimensions: number;
  workspaces: LargeDataWorkspace[];
  /** Each phase and how long it took. */
  phases: { phase: string; ms: number }[];
  /** `count` queries of the corpus's words (full text finds their chunks), the same for a seed. */
  queries(count: number, seed?: number): string[];
}

export async function generateLargeData(options: LargeDataOptions): Promise<LargeData> {
  const log = options.log ?? ((line: string) => console.log(line));
  const seed = options.seed ?? 37;
  const name = options.name ?? 'large';
  const phases: LargeData['phases'] = [];
  const timed = async <T>(phase: string, work: () => Promise<T>, detail: (result: T) => string = () => ''): Promise<T> => {
    const started = performance.now();
    const result = await work();
    const ms = performance.now() - started;
    phases.push({ phase, ms });
    const said = detail(result);
    log(`large-data: ${phase}: ${(ms / 1000).toFixed(1)} s${said ? ` (${said})` : ''}`);
    return result;
  };
  const sql = postgres(options.url, {
    max: 1 + COPY_LANES,
    // pgvector says so when the graph outgrows maintenance_work_mem (the build then slows down a lot): --index-memory.
    onnotice: (notice) => log(`large-data: the server says: ${notice.message}`),
    connection: { application_name: 'large-data', synchronous_commit: 'off' },
  });
  try {
    const { configOid, config } = await checkSchema(sql);
    const owner = options.organizationOf ? await ownerOf(sql, options.organizationOf) : null;
    const corpus = new Corpus(seed, EMBEDDING_DIMENSIONS);
    const run = randomSuffix(seed);
    const { organizationId, workspaces } = await timed(
      'organization and workspaces',
      async () => {
        const organizationId = owner?.organizationId ?? newId('org');
        if (!owner) await sql`insert into organizations (id, name, slug) values (${organizationId}, ${`Large data ${run}`}, ${`${name}-${run}`})`;
        const workspaces: LargeDataWorkspace[] = [];
        for (const [index, chunks] of options.sizes.entries()) {
          const workspace = { id: newId('ws'), slug: `${name}-${run}-${index + 1}`, chunks, documents: 0 };
          await sql`insert into workspaces (id, organization_id, name, slug) values (${workspace.id}, ${organizationId}, ${`${name} ${index + 1} (${chunks} chunks)`}, ${workspace.slug})`;
          workspaces.push(workspace);
        }
        return { organizationId, workspaces };
      },
      ({ organizationId }) => `${organizationId}${owner ? `, owned by ${owner.userId}` : ', new'}`,
    );

    const indexes = await sql<{ name: string; definition: string }[]>`
      select indexname as name, indexdef as definition from pg_indexes
      where schemaname = current_schema() and tablename = 'document_chunks'
        and indexname not in (select c.conindid::regclass::text from pg_constraint c where c.conrelid = 'document_chunks'::regclass and c.contype in ('p', 'u', 'x'))
      order by indexname`;
    for (const index of indexes) log(`large-data: drops ${index.name}, to build again: ${index.definition}`);
    await timed('drop secondary indexes', async () => {
      await sql.begin(async (tx) => {
        await tx`set local lock_timeout = '10s'`;
        for (const index of indexes) await tx.unsafe(`drop index ${quoteIdentifier(index.name)}`);
      });
    });
    let failed = true;
    try {
      const total = options.sizes.reduce((sum, n) => sum + n, 0);
      await timed(
        'documents, texts and chunks (COPY)',
        () => loadRows(sql, corpus, { generation: options.generation ?? 'per-document', organizationId, uploadedBy: owner?.userId ?? null, workspaces, configOid, log, total }),
        (rows) => `${rows.documents} documents, ${rows.chunks} chunks, ${(rows.chunks / Math.max(rows.seconds, 0.001)).toFixed(0)} chunks/s`,
      );
      failed = false;
    } finally {
      // Built again whatever happened: a database left without them would search by sequential scans.
      await buildIndexes(sql, indexes, options.indexMemory ?? '1GB', timed, log, failed);
    }
    await timed('analyze', async () => {
      await sql`analyze documents`;
      await sql`analyze document_texts`;
      await sql`analyze document_chunks`;
    });
    log(
      `large-data: ${workspaces.map((w) => `${w.slug} (${w.id}): ${w.chunks} chunks in ${w.documents} documents`).join('; ')}; organization ${organizationId}, ` +
        `model ${LOCAL_EMBEDDING_MODEL} (${EMBEDDING_DIMENSIONS} dimensions), search_config ${config}`,
    );
    return {
      organizationId,
      userId: owner?.userId ?? null,
      model: LOCAL_EMBEDDING_MODEL,
      dimensions: EMBEDDING_DIMENSIONS,
      workspaces,
      phases,
      queries: (count, querySeed = seed + 1) => {
        const random = generator(querySeed);
        return Array.from({ length: count }, () => corpus.query(random));
      },
    };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** The columns this writes exist (the database is migrated), and the embedding column has the model's dimensions. */
async function checkSchema(sql: postgres.Sql): Promise<{ configOid: number; config: string }> {
  const columns = await sql<{ name: string; typmod: number }[]>`
    select attname as name, atttypmod as typmod from pg_attribute
    where attrelid = to_regclass('document_chunks') and attnum > 0 and not attisdropped`;
  const missing = CHUNK_COLUMNS.filter((column) => !columns.some((found) => found.name === column));
  if (columns.length === 0 || missing.length > 0) {
    throw new Error(`document_chunks ${columns.length === 0 ? 'does not exist' : `has no ${missing.join(', ')}`}: migrate the database first (node src/main.ts migrate)`);
  }
  // pgvector keeps a vector column's dimensions as its type modifier.
  const dimensions = columns.find((column) => column.name === 'embedding')!.typmod;
  if (dimensions !== EMBEDDING_DIMENSIONS) throw new Error(`document_chunks.embedding has ${dimensions} dimensions, the model ${LOCAL_EMBEDDING_MODEL} ${EMBEDDING_DIMENSIONS}`);
  // As text-store.ts searchConfigOf: the configuration the language picks, `simple` when the server lacks it.
  const [row] = await sql<{ oid: number; config: string }[]>`
    select c.oid::int as oid, c.oid::regconfig::text as config from pg_ts_config c
    where c.cfgname = coalesce((select cfgname from pg_ts_config where cfgname = ${textSearchConfig(LANGUAGE)}), 'simple') limit 1`;
  return { configOid: row!.oid, config: row!.config };
}

async function ownerOf(sql: postgres.Sql, who: string): Promise<{ userId: string; organizationId: string }> {
  const [user] = await sql<{ id: string }[]>`select id from users where id = ${who} or lower(email) = lower(${who})`;
  if (!user) throw new Error(`--organization-of: no user with the id or email ${who}`);
  const [member] = await sql<{ organizationId: string }[]>`
    select organization_id as "organizationId" from members where user_id = ${user.id} and role = 'owner' order by created_at, id limit 1`;
  if (!member) throw new Error(`--organization-of: ${who} owns no organization (create one first: POST /api/auth/organization/create)`);
  return { userId: user.id, organizationId: member.organizationId };
}

async function buildIndexes(
  sql: postgres.Sql,
  indexes: { name: string; definition: string }[],
  memory: string,
  timed: <T>(phase: string, work: () => Promise<T>) => Promise<T>,
  log: (line: string) => void,
  afterFailure: boolean,
): Promise<void> {
  if (afterFailure) log('large-data: the load failed; building the dropped indexes again before stopping');
  // The graph first, alone: its build takes the memory pgvector asks for and a parallel worker (both cores).
  const order = [...indexes].sort((a, b) => Number(/using hnsw/i.test(b.definition)) - Number(/using hnsw/i.test(a.definition)));
  for (const index of order) {
    await timed(`index ${index.name}`, () =>
      sql.begin(async (tx) => {
        await tx`select set_config('maintenance_work_mem', ${memory}, true)`;
        await tx`set local max_parallel_maintenance_workers = 1`;
        await tx.unsafe(index.definition);
      }),
    );
  }
}

/** Six characters from the seed and the clock, so that two runs on one database get their own slugs. */
function randomSuffix(seed: number): string {
  return `${seed.toString(36)}${Date.now().toString(36).slice(-4)}`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      chunks: { type: 'string' },
      workspaces: { type: 'string', default: '1' },
      sizes: { type: 'string' },
      'organization-of': { type: 'string' },
      seed: { type: 'string', default: '37' },
      name: { type: 'string', default: 'large' },
      generation: { type: 'string', default: 'per-document' },
      'index-memory': { type: 'string', default: '1GB' },
    },
  });
  const usage =
    'usage: node bench/large-data.ts --url postgres://... (--chunks N [--workspaces M] | --sizes N1,N2,...) [--organization-of <user email or id>] [--seed S] [--name PREFIX] [--generation per-document|zero] [--index-memory 1GB]';
  const count = (value: string) => (/^\d+$/.test(value) ? Number(value) : NaN);
  let sizes: number[];
  if (values.sizes) sizes = values.sizes.split(',').map(count);
  else {
    const chunks = count(values.chunks ?? '');
    const workspaces = count(values.workspaces);
    sizes = Array.from({ length: workspaces }, (_, i) => Math.floor(chunks / workspaces) + (i < chunks % workspaces ? 1 : 0));
  }
  const generation = values.generation;
  if (!values.url || sizes.length === 0 || sizes.some((n) => !(n > 0)) || !Number.isInteger(count(values.seed)) || (generation !== 'per-document' && generation !== 'zero')) {
    console.error(usage);
    process.exit(2);
  }
  const started = performance.now();
  const data = await generateLargeData({ url: values.url, sizes, organizationOf: values['organization-of'], seed: count(values.seed), name: values.name, generation, indexMemory: values['index-memory'] });
  console.log(`large-data: done in ${((performance.now() - started) / 1000).toFixed(1)} s; a query to try: ${JSON.stringify(data.queries(1)[0])}`);
}

if (import.meta.main) {
  await main().catch((error: unknown) => {
    console.error(`large-data failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}

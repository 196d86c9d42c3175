/**
 * What storing a document's chunks does to other queries on the embedded database (issue 24, item
 * 5): p99 of a workspaces.list-shaped query (a page of an organization's workspaces), sent one
 * after another, while CHUNKS chunks (384-dimension vectors, HNSW and GIN indexes) are stored
 * - before: in one transaction (replaceChunks as it was: delete, insert 200 rows per statement, commit);
 * - now: replaceChunks (documents/text-store.ts): 50 rows per statement under a new generation,
 *   one short transaction to make them current, the old generation deleted 50 rows at a time;
 * and idle. Each store replaces a document that already has CHUNKS chunks.
 *
 *   node bench/chunk-storage.ts [chunks]
 */
import { performance } from 'node:perf_hooks';
import { replaceChunks, vectorLiteral, type StoredChunk } from '../src/documents/text-store.ts';
import { NO_DEADLINE, withDeadline } from '../src/db/deadline.ts';
import { openBenchDatabase, percentile } from './support.ts';

const CHUNKS = Number(process.argv[2] ?? 300);
const db = await openBenchDatabase();
const sql = db.sql;

await sql`insert into organizations (id, name, slug) values ('org_bench', 'Bench', 'bench')`;
await sql`insert into workspaces (id, organization_id, name, slug) select 'wsp_' || i, 'org_bench', 'W' || i, 'w' || i from generate_series(1, 20) i`;
await sql`insert into documents (id, organization_id, workspace_id, name, content_type, size, status) values ('doc_bench', 'org_bench', 'wsp_1', 'bench.txt', 'text/plain', 1, 'ready')`;
const document = { id: 'doc_bench', organizationId: 'org_bench', workspaceId: 'wsp_1' };

let seed = 1;
const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 4294967296;
const chunks = (round: number): StoredChunk[] =>
  Array.from({ length: CHUNKS }, (_, i) => {
    const text = `Round ${round} chunk ${i}: ${Array.from({ length: 150 }, () => Math.floor(random() * 5000).toString(36)).join(' ')}`;
    return { text, embedding: Array.from({ length: 384 }, () => random() - 0.5), start: 0, end: text.length, firstPage: null, lastPage: null, headingPath: null, textHash: `h${round}-${i}` };
  });

/** The former replaceChunks: one transaction for the whole document. */
async function oneTransaction(round: number): Promise<void> {
  const rows = chunks(round);
  // Without the request deadline, as the worker's jobs run.
  await withDeadline(NO_DEADLINE, () =>
    sql.begin(async (tx) => {
      await tx`select 1 from documents where id = ${document.id} for no key update`;
      await tx`delete from document_chunks where document_id = ${document.id}`;
      for (let i = 0; i < rows.length; i += 200) {
        await tx`insert into document_chunks ${tx(
          rows.slice(i, i + 200).map((chunk, offset) => ({
            id: `chk_${round}_${i + offset}`,
            organization_id: document.organizationId,
            workspace_id: document.workspaceId,
            document_id: document.id,
            index: i + offset,
            text: chunk.text,
            model: 'bench',
            embedding: vectorLiteral(chunk.embedding),
          })),
        )}`;
      }
      await tx`update documents set chunk_count = ${rows.length} where id = ${document.id}`;
    }),
  );
}

/** Latencies of the probe query, one after another, until `work` settles. */
async function probeDuring(work: Promise<unknown>): Promise<number[]> {
  let done = false;
  void work.finally(() => (done = true));
  const latencies: number[] = [];
  while (!done) {
    const started = performance.now();
    await sql`select id, name, slug from workspaces where organization_id = 'org_bench' order by created_at desc, id desc limit 20`;
    latencies.push(performance.now() - started);
  }
  await work;
  return latencies;
}

const report = (name: string, latencies: number[], ms?: number) =>
  console.log(
    `${name}: p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(0)} ms (${latencies.length} queries${ms ? `, store ${(ms / 1000).toFixed(1)} s` : ''})`,
  );

await oneTransaction(0);
const idle: number[] = [];
for (let i = 0; i < 300; i++) {
  const started = performance.now();
  await sql`select id, name, slug from workspaces where organization_id = 'org_bench' order by created_at desc, id desc limit 20`;
  idle.push(performance.now() - started);
}
report('idle', idle);
for (let round = 1; round <= 2; round++) {
  let started = performance.now();
  report(`one transaction (${CHUNKS} chunks), round ${round}`, await probeDuring(oneTransaction(round * 10)), performance.now() - started);
  started = performance.now();
  report(`short statements (${CHUNKS} chunks), round ${round}`, await probeDuring(replaceChunks(sql, document, 'bench', chunks(round * 10 + 1), new Date())), performance.now() - started);
}
await db.close();

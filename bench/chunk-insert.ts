/**
 * What one chunk's insert costs the embedded database (PGlite, in this thread): the statement the
 * job worker runs per chunk (documents/text-store.ts, CHUNK_BATCH 1) holds the one connection for
 * that long, and an API request that arrives meanwhile waits for it (db/request-gate.ts), so this
 * is the floor under the API's p99 while indexing (bench/api-latency.ts). A table shaped like
 * document_chunks' searched columns (text, a 384-dimension vector, its tsvector) is filled one row
 * per statement with prose (bench/prose.ts, about 220 words a row) and random unit vectors, under
 * each set of indexes: none (the baseline), the full-text GIN index alone, the HNSW index alone,
 * both (the service's, sql/0005 and sql/0014), and both with a sparser HNSW graph (m 8,
 * ef_construction 32) for comparison. Reports the median and p99 per row over the last ROWS / 2
 * rows (a graph of ROWS / 2 to ROWS vectors), each as a ratio to the baseline's median.
 * A measurement, not a test.
 *   node bench/chunk-insert.ts
 */
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { proseParagraphs } from './prose.ts';
import { percentile } from './support.ts';

const ROWS = 1500;
const DIMENSIONS = 384;
const HNSW = 'create index on chunks using hnsw (embedding vector_cosine_ops)';
const GIN = 'create index on chunks using gin (search_vector) with (fastupdate = off)';

const variants: { name: string; indexes: string[] }[] = [
  { name: 'no index (baseline)', indexes: [] },
  { name: 'GIN (full text) alone', indexes: [GIN] },
  { name: 'HNSW alone', indexes: [HNSW] },
  { name: "both, the service's", indexes: [HNSW, GIN] },
  { name: 'both, HNSW m 8, ef_construction 32', indexes: [`${HNSW} with (m = 8, ef_construction = 32)`, GIN] },
];

/** A random point on the unit sphere, as pgvector's text form; seeded, so every variant gets the same rows. */
function vectors(seed: number): () => string {
  let state = seed;
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32 - 0.5;
  return () => {
    const values = Array.from({ length: DIMENSIONS }, next);
    const norm = Math.hypot(...values);
    return `[${values.map((value) => (value / norm).toFixed(6)).join(',')}]`;
  };
}

/** Texts of about 220 words: prose paragraphs joined until long enough. */
function texts(count: number): string[] {
  const paragraphs = proseParagraphs();
  return Array.from({ length: count }, () => {
    let text = '';
    while (text.split(' ').length < 220) text += `${paragraphs.next().value.text} `;
    return text;
  });
}

async function measure(indexes: string[], rows: string[]): Promise<number[]> {
  const db = await PGlite.create({ extensions: { vector } });
  try {
    await db.exec('create extension vector; create table chunks (id serial primary key, text text not null, embedding vector(384), search_vector tsvector)');
    for (const ddl of indexes) await db.exec(ddl);
    const nextVector = vectors(2026);
    const times: number[] = [];
    for (const text of rows) {
      const started = performance.now();
      await db.query(`insert into chunks (text, embedding, search_vector) values ($1, $2::vector, to_tsvector('english', $1))`, [text, nextVector()]);
      times.push(performance.now() - started);
    }
    return times.slice(rows.length / 2);
  } finally {
    await db.close();
  }
}

const rows = texts(ROWS);
let baseline = 0;
console.log(`One row per statement on PGlite, rows ${ROWS / 2 + 1}-${ROWS} (ms per row; × the baseline's median):`);
for (const variant of variants) {
  const times = await measure(variant.indexes, rows);
  const median = percentile(times, 50);
  const p99 = percentile(times, 99);
  if (baseline === 0) baseline = median;
  console.log(
    `  ${variant.name.padEnd(38)} median ${median.toFixed(2)} (${(median / baseline).toFixed(2)} ×)  p99 ${p99.toFixed(2)} (${(p99 / baseline).toFixed(2)} ×)  max ${Math.max(...times).toFixed(1)}`,
  );
}

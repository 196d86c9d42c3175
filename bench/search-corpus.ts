/**
 * A synthetic search corpus shaped like real sentence embeddings, and its loading.
 *
 * Uniform random vectors are the wrong test for an HNSW index (no neighbourhoods; every point is
 * about as far as every other), and embedding 100 000 chunks with the local model (about 20
 * chunks/s on 2 cores) would take well over an hour per run. Real embeddings (e.g. the local
 * 384-dimension MiniLM) are dense, share a common direction (unrelated texts still score about
 * 0.1 to 0.3) and cluster by topic and by document. So each chunk is
 *   a·common + b·topic + c·document + e·noise, L2-normalised,
 * with every term a random unit vector (seeded, so runs are comparable): chunks of one document
 * score about 0.76 with each other, chunks of one topic about 0.59, anything else about 0.17.
 * Queries are made the same way from a document (half of them: its chunks are the answer) or
 * from a topic only (the other half: the answer is spread over that topic's documents).
 *
 * Every chunk is of one model, CORPUS_MODEL (search reads the chunks of the query's model only).
 *
 * Loading: the HNSW and full-text (GIN) indexes are dropped, the rows go in (binary COPY on a real
 * server, multi-row inserts on the embedded one, which has no COPY path through its socket), then
 * the indexes are rebuilt from the migrations' own definitions. pgvector's documentation advises
 * building after the initial load: one build is much faster than inserting row by row into the
 * graph (and a GIN index, too, builds faster than it grows).
 */
import { Writable } from 'node:stream';
import postgres from 'postgres';
import type { Database } from '../src/db/connection.ts';
import { newId } from '../src/ids.ts';
import { vectorLiteral } from '../src/documents/text-store.ts';

export const DIMENSIONS = 384;
/** The `model` of every chunk of the corpus; the benches search with the same one. */
export const CORPUS_MODEL = 'bench-synthetic-384';
/** The indexes dropped for the load and rebuilt after it. */
const REBUILT_INDEXES = ['document_chunks_embedding', 'document_chunks_search_vector'];
const WEIGHTS = { common: 0.5, topic: 0.8, document: 0.5, noise: 0.6 };
const CHUNKS_PER_DOCUMENT = 20;
const TOPICS = 400;

/** xoshiro128** (Blackman and Vigna): a small, fast, seeded generator. */
function generator(seed: number) {
  let a = seed ^ 0x9e3779b9,
    b = seed ^ 0x243f6a88,
    c = seed ^ 0xb7e15162,
    d = seed ^ 0x85a308d3;
  const next = () => {
    const result = Math.imul(rotl(Math.imul(b, 5), 7), 9);
    const t = b << 9;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return (result >>> 0) / 4294967296;
  };
  for (let i = 0; i < 16; i++) next();
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  const unit = () => normalise(Float32Array.from({ length: DIMENSIONS }, gaussian));
  return { next, int: (n: number) => Math.floor(next() * n), gaussian, unit };
}
function rotl(x: number, k: number) {
  return (x << k) | (x >>> (32 - k));
}
function normalise(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
}

interface CorpusDocument {
  id: string;
  topic: number;
  direction: Float32Array;
}

export interface CorpusWorkspace {
  id: string;
  organizationId: string;
  chunks: number;
  documents: CorpusDocument[];
}

export interface ChunkRow {
  id: string;
  organizationId: string;
  workspaceId: string;
  documentId: string;
  index: number;
  text: string;
  embedding: Float32Array;
}

export class Corpus {
  readonly workspaces: CorpusWorkspace[];
  private readonly random = generator(20261122);
  private readonly common = this.random.unit();
  private readonly topics = Array.from({ length: TOPICS }, () => this.random.unit());
  private readonly vocabulary = Array.from({ length: 3000 }, (_, i) => word(i));

  /** `sizes`: chunks per workspace, each workspace in its own organization. */
  constructor(sizes: number[]) {
    this.workspaces = sizes.map((chunks) => ({
      id: newId('ws'),
      organizationId: newId('org'),
      chunks,
      documents: Array.from({ length: Math.ceil(chunks / CHUNKS_PER_DOCUMENT) }, () => ({ id: newId('doc'), topic: this.random.int(TOPICS), direction: this.random.unit() })),
    }));
  }

  get totalChunks(): number {
    return this.workspaces.reduce((sum, workspace) => sum + workspace.chunks, 0);
  }

  /** Every chunk, workspace by workspace, generated as it is read. */
  *chunks(): Generator<ChunkRow> {
    for (const workspace of this.workspaces) {
      for (let n = 0; n < workspace.chunks; n++) {
        const document = workspace.documents[Math.floor(n / CHUNKS_PER_DOCUMENT)]!;
        yield {
          id: newId('chk'),
          organizationId: workspace.organizationId,
          workspaceId: workspace.id,
          documentId: document.id,
          index: n % CHUNKS_PER_DOCUMENT,
          text: this.text(document.topic),
          embedding: this.vector(document.topic, document.direction),
        };
      }
    }
  }

  /** `count` query vectors for a workspace: alternately near one of its documents and near one of its topics. */
  queries(workspace: CorpusWorkspace, count: number): number[][] {
    return Array.from({ length: count }, (_, i) => {
      const document = workspace.documents[this.random.int(workspace.documents.length)]!;
      return Array.from(this.vector(document.topic, i % 2 === 0 ? document.direction : null));
    });
  }

  private vector(topic: number, direction: Float32Array | null): Float32Array {
    const v = new Float32Array(DIMENSIONS);
    const t = this.topics[topic]!;
    for (let i = 0; i < DIMENSIONS; i++) {
      v[i] = WEIGHTS.common * this.common[i]! + WEIGHTS.topic * t[i]! + (direction ? WEIGHTS.document * direction[i]! : 0) + (WEIGHTS.noise / Math.sqrt(DIMENSIONS)) * this.random.gaussian();
    }
    return normalise(v);
  }

  /** About 1 000 characters (the chunker's default size): half topic words, half common ones. */
  private text(topic: number): string {
    const words: string[] = [];
    for (let length = 0; length < 1000;) {
      const next = this.random.next() < 0.5 ? this.vocabulary[(topic * 7 + this.random.int(40)) % this.vocabulary.length]! : this.vocabulary[this.random.int(this.vocabulary.length)]!;
      words.push(next);
      length += next.length + 1;
    }
    return `${words.join(' ')}.`;
  }
}

function word(i: number): string {
  const syllables = ['ka', 'lo', 'mi', 'ne', 'ro', 'sa', 'ti', 'vu', 'de', 'ph', 'qu', 'an', 'el', 'or', 'ix', 'um'];
  let text = '';
  for (let n = i + 17; n > 0; n = Math.floor(n / 16)) text += syllables[n % 16];
  return text;
}

export interface LoadTimings {
  /** Rows (organizations, workspaces, documents, chunks) in, ms. */
  loadMs: number;
  /** The HNSW and GIN indexes rebuilt, ms. */
  indexMs: number;
}

/**
 * Loads the corpus into a migrated database. `url` (a real server) loads the chunks with binary
 * COPY over a connection of its own, without the app's statement timeout; without it (the embedded
 * database) with multi-row inserts.
 */
export async function loadCorpus(db: Database, corpus: Corpus, url?: string): Promise<LoadTimings> {
  const started = performance.now();
  const { sql } = db;
  for (const workspace of corpus.workspaces) {
    await sql`insert into organizations (id, name, slug) values (${workspace.organizationId}, ${'Bench ' + workspace.organizationId}, ${workspace.organizationId.replace('_', '-')})`;
    await sql`insert into workspaces (id, organization_id, name, slug) values (${workspace.id}, ${workspace.organizationId}, 'Search', 'search')`;
    for (let i = 0; i < workspace.documents.length; i += 1000) {
      const rows = workspace.documents.slice(i, i + 1000).map((document) => ({
        id: document.id,
        organization_id: workspace.organizationId,
        workspace_id: workspace.id,
        name: `${document.id}.md`,
        content_type: 'text/markdown',
        size: 20_000,
        status: 'ready',
      }));
      await sql`insert into documents ${sql(rows)}`;
    }
  }
  const indexes = await sql<{ name: string; indexdef: string }[]>`select indexname as name, indexdef from pg_indexes where indexname in ${sql(REBUILT_INDEXES)}`;
  const missing = REBUILT_INDEXES.filter((name) => !indexes.some((index) => index.name === name));
  if (missing.length) throw new Error(`${missing.join(', ')} missing: has a migration changed?`);
  for (const index of indexes) await sql.unsafe(`drop index ${index.name}`);

  if (url) await copyChunks(url, corpus);
  else await insertChunks(sql, corpus);
  const loaded = performance.now();

  if (url) {
    const direct = postgres(url, { max: 1, onnotice: () => {} });
    try {
      for (const index of indexes) await direct.unsafe(index.indexdef);
      await direct`analyze document_chunks`;
      await direct`analyze documents`;
    } finally {
      await direct.end({ timeout: 5 });
    }
  } else {
    for (const index of indexes) await sql.unsafe(index.indexdef);
    await sql`analyze document_chunks`;
    await sql`analyze documents`;
  }
  return { loadMs: loaded - started, indexMs: performance.now() - loaded };
}

async function insertChunks(sql: Database['sql'], corpus: Corpus): Promise<void> {
  let batch: Record<string, unknown>[] = [];
  const flush = async () => {
    if (batch.length) await sql`insert into document_chunks ${sql(batch as never)}`;
    batch = [];
  };
  for (const chunk of corpus.chunks()) {
    batch.push({
      id: chunk.id,
      organization_id: chunk.organizationId,
      workspace_id: chunk.workspaceId,
      document_id: chunk.documentId,
      index: chunk.index,
      text: chunk.text,
      model: CORPUS_MODEL,
      embedding: vectorLiteral(Array.from(chunk.embedding)),
    });
    if (batch.length === 250) await flush();
  }
  await flush();
}

/** COPY ... (FORMAT binary): no float formatting and parsing of 40 million numbers. */
async function copyChunks(url: string, corpus: Corpus): Promise<void> {
  const direct = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const stream: Writable = await direct`copy document_chunks (id, organization_id, workspace_id, document_id, index, text, model, embedding) from stdin with (format binary)`.writable();
    const write = (buffer: Buffer) => (stream.write(buffer) ? Promise.resolve() : new Promise<void>((resolve) => stream.once('drain', resolve)));
    // Header: signature, flags, header extension length (PostgreSQL docs, COPY, "Binary Format").
    await write(Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]));
    const parts: Buffer[] = [];
    let size = 0;
    for (const chunk of corpus.chunks()) {
      const row = binaryRow(chunk);
      parts.push(row);
      size += row.length;
      if (size > 1 << 20) {
        await write(Buffer.concat(parts));
        parts.length = 0;
        size = 0;
      }
    }
    parts.push(Buffer.from([0xff, 0xff])); // trailer: a field count of -1
    await write(Buffer.concat(parts));
    await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
  } finally {
    await direct.end({ timeout: 5 });
  }
}

function binaryRow(chunk: ChunkRow): Buffer {
  const texts = [chunk.id, chunk.organizationId, chunk.workspaceId, chunk.documentId].map((value) => Buffer.from(value));
  const text = Buffer.from(chunk.text);
  const model = Buffer.from(CORPUS_MODEL);
  const vectorBytes = 4 + 4 * DIMENSIONS; // pgvector's binary form: int16 dimensions, int16 unused, float4 each
  const length = 2 + texts.reduce((sum, value) => sum + 4 + value.length, 0) + 8 + 4 + text.length + 4 + model.length + 4 + vectorBytes;
  const row = Buffer.alloc(length);
  let at = row.writeInt16BE(8, 0);
  for (const value of texts) {
    at = row.writeInt32BE(value.length, at);
    at += value.copy(row, at);
  }
  at = row.writeInt32BE(4, at);
  at = row.writeInt32BE(chunk.index, at);
  at = row.writeInt32BE(text.length, at);
  at += text.copy(row, at);
  at = row.writeInt32BE(model.length, at);
  at += model.copy(row, at);
  at = row.writeInt32BE(vectorBytes, at);
  at = row.writeInt16BE(DIMENSIONS, at);
  at = row.writeInt16BE(0, at);
  for (const x of chunk.embedding) at = row.writeFloatBE(x, at);
  return row;
}

/**
 * Indexing throughput: chunks per second through the path a document.index job takes with the
 * local provider (src/jobs/kinds.ts), stage by stage on the same functions: the document's bytes
 * through the AI service's `POST /v1/extract` (a started startAiService, reached with
 * createAiClient), chunkText, embeddings in batches of 32 through `POST /v1/embeddings` (the
 * job's EMBED_BATCH), and replaceChunks into document_chunks (HNSW index included). The document
 * is a generated Markdown file of about 1 MiB (headings, paragraphs, lists); the storage read is
 * left out (a local file read, measured by bench/upload.ts).
 *
 * Reports chunks/s end to end and the share of each stage, and two ratios against baselines in
 * the same run, each answering a design question:
 * - embed through the service / the same embedder (embedLocally) called in process: what the
 *   service boundary (HTTP, 384 numbers per chunk as JSON both ways) costs over the work itself;
 *   the local embedder is cheap, so this is the overhead a hosted provider's latency would hide.
 * - replaceChunks / a plain multi-row insert of the same rows into a table without indexes: what
 *   the HNSW graph (and the unique, workspace and organization indexes) costs per chunk; it is the
 *   part that grows with the corpus, not something the code around it can make cheaper.
 * Rounds re-index the same document (replaceChunks deletes the previous chunks first), median of
 * the rounds. A measurement, not a test: nothing fails when a figure misses its aim.
 *   node bench/indexing.ts [--embedded-only | --real-only]
 */
import type { Database } from '../src/db/connection.ts';
import { loadConfig } from '../src/config.ts';
import { createAiClient } from '../src/ai-service/client.ts';
import { embedLocally } from '../src/ai-service/local-embedder.ts';
import { startAiService } from '../src/ai-service/server.ts';
import { vectorLiteral, replaceChunks } from '../src/documents/text-store.ts';
import { newId } from '../src/ids.ts';
import { chunkText } from '../src/jobs/chunking.ts';
import { createLogger } from '../src/logger.ts';
import { runStandalone } from './pg-server.ts';
import { median } from './support.ts';

/** Texts per embeddings request, as kinds.ts sends them. */
const EMBED_BATCH = 32;
const STAGES = ['extract', 'chunk', 'embed', 'insert'] as const;
type Stage = (typeof STAGES)[number];

export interface IndexingResult {
  where: string;
  bytes: number;
  chunks: number;
  /** Medians of the rounds. */
  chunksPerSecond: number;
  totalMs: number;
  stageMs: Record<Stage, number>;
  /** embed via the AI service / embedLocally in process (medians of per-round ratios). */
  embedRatio: number;
  inProcessEmbedMs: number;
  /** replaceChunks / plain insert into an unindexed table. */
  insertRatio: number;
  plainInsertMs: number;
}

/** About `bytes` of Markdown: sections of paragraphs and lists, English-like words. */
export function markdownDocument(bytes: number): string {
  let seed = 42;
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  const vocabulary = ('the of and to in a is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if more no out so said what up its about into than them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three')
    .split(' ');
  const words = (n: number) => Array.from({ length: n }, () => vocabulary[Math.floor(random() * vocabulary.length)]).join(' ');
  const sentence = () => {
    const text = words(8 + Math.floor(random() * 14));
    return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
  };
  const parts: string[] = ['# Operations handbook\n'];
  let size = parts[0]!.length;
  for (let section = 1; size < bytes; section++) {
    const block = random() < 0.2
      ? Array.from({ length: 3 + Math.floor(random() * 4) }, () => `- ${sentence()}`).join('\n')
      : Array.from({ length: 3 + Math.floor(random() * 6) }, sentence).join(' ');
    const text = section % 6 === 1 ? `## Section ${section}: ${words(3)}\n\n${block}\n` : `${block}\n`;
    parts.push(text);
    size += text.length + 1;
  }
  return parts.join('\n');
}

export async function benchIndexing(db: Database, where: string, { bytes = 1024 * 1024, rounds = 3 } = {}): Promise<IndexingResult> {
  const ai = await startAiService({ settings: loadConfig({}).ai, host: '127.0.0.1', port: 0, logger: createLogger('silent') });
  const client = createAiClient({ url: ai.url });
  try {
    const organizationId = newId('org');
    const workspaceId = newId('ws');
    const document = { id: newId('doc'), organizationId, workspaceId };
    await db.sql`insert into organizations (id, name, slug) values (${organizationId}, 'Indexing bench', ${organizationId.replace('_', '-')})`;
    await db.sql`insert into workspaces (id, organization_id, name, slug) values (${workspaceId}, ${organizationId}, 'Indexing', 'indexing')`;
    const source = Buffer.from(markdownDocument(bytes));
    await db.sql`insert into documents (id, organization_id, workspace_id, name, content_type, size, status)
                 values (${document.id}, ${organizationId}, ${workspaceId}, 'handbook.md', 'text/markdown', ${source.length}, 'ready')`;
    // The baseline's table: the same columns, no index at all.
    await db.sql`create unlogged table bench_plain_chunks (like document_chunks including defaults)`;

    const runs: { stageMs: Record<Stage, number>; chunks: number; inProcessEmbedMs: number; plainInsertMs: number }[] = [];
    for (let round = 0; round <= rounds; round++) {
      const stageMs = {} as Record<Stage, number>;
      const stage = async <T>(name: Stage, work: () => Promise<T> | T): Promise<T> => {
        const started = performance.now();
        const value = await work();
        stageMs[name] = performance.now() - started;
        return value;
      };
      const { text } = await stage('extract', () => client.extract(source, 'text/markdown'));
      const chunks = await stage('chunk', () => chunkText(text));
      const vectors = await stage('embed', async () => {
        const all: number[][] = [];
        for (let i = 0; i < chunks.length; i += EMBED_BATCH) all.push(...(await client.embed(chunks.slice(i, i + EMBED_BATCH))).vectors);
        return all;
      });
      const stored = await stage('insert', () => replaceChunks(db.sql, document, chunks.map((chunk, i) => ({ text: chunk, embedding: vectors[i]! })), new Date()));
      if (!stored) throw new Error('replaceChunks found no document');

      let started = performance.now();
      for (const chunk of chunks) embedLocally(chunk);
      const inProcessEmbedMs = performance.now() - started;
      await db.sql`truncate bench_plain_chunks`;
      started = performance.now();
      for (let i = 0; i < chunks.length; i += 200) {
        const rows = chunks.slice(i, i + 200).map((chunk, offset) => ({
          id: newId('chk'), organization_id: organizationId, workspace_id: workspaceId, document_id: document.id, index: i + offset, text: chunk, embedding: vectorLiteral(vectors[i + offset]!),
        }));
        await db.sql`insert into bench_plain_chunks ${db.sql(rows)}`;
      }
      const plainInsertMs = performance.now() - started;
      const total = STAGES.reduce((sum, name) => sum + stageMs[name], 0);
      // Round 0 warms up the JIT, the connection's prepared statements and the service.
      if (round > 0) {
        runs.push({ stageMs, chunks: chunks.length, inProcessEmbedMs, plainInsertMs });
        console.log(`  indexing round ${round}: ${chunks.length} chunks in ${(total / 1000).toFixed(2)} s (${Math.round(chunks.length / (total / 1000))} chunks/s): `
          + `${STAGES.map((name) => `${name} ${stageMs[name].toFixed(0)} ms`).join(', ')}; in-process embed ${inProcessEmbedMs.toFixed(0)} ms, plain insert ${plainInsertMs.toFixed(0)} ms`);
      }
    }
    await db.sql`drop table bench_plain_chunks`;
    const stageMs = Object.fromEntries(STAGES.map((name) => [name, median(runs.map((run) => run.stageMs[name]))])) as Record<Stage, number>;
    const totals = runs.map((run) => STAGES.reduce((sum, name) => sum + run.stageMs[name], 0));
    return {
      where,
      bytes: source.length,
      chunks: runs[0]!.chunks,
      chunksPerSecond: median(runs.map((run, i) => run.chunks / (totals[i]! / 1000))),
      totalMs: median(totals),
      stageMs,
      embedRatio: median(runs.map((run) => run.stageMs.embed / run.inProcessEmbedMs)),
      inProcessEmbedMs: median(runs.map((run) => run.inProcessEmbedMs)),
      insertRatio: median(runs.map((run) => run.stageMs.insert / run.plainInsertMs)),
      plainInsertMs: median(runs.map((run) => run.plainInsertMs)),
    };
  } finally {
    await ai.close();
  }
}

/** Rows for bench/index.ts's table. */
export function indexingRows(result: IndexingResult | { skipped: string; where: string }): string[][] {
  if ('skipped' in result) return [[`indexing, ${result.where}`, `skipped: ${result.skipped}`, '']];
  const shares = STAGES.map((name) => `${name} ${Math.round((100 * result.stageMs[name]) / result.totalMs)}%`).join(', ');
  return [
    [`indexing chunks/s (${result.where}, ${(result.bytes / 2 ** 20).toFixed(1)} MiB .md, ${result.chunks} chunks)`, `${Math.round(result.chunksPerSecond)}  (${(result.totalMs / 1000).toFixed(2)} s: ${shares})`, ''],
    ['  embed via AI service / in process', `${result.embedRatio.toFixed(1)}  (${result.stageMs.embed.toFixed(0)} / ${result.inProcessEmbedMs.toFixed(0)} ms)`, ''],
    ['  replaceChunks / plain insert, no indexes', `${result.insertRatio.toFixed(1)}  (${result.stageMs.insert.toFixed(0)} / ${result.plainInsertMs.toFixed(0)} ms)`, ''],
  ];
}

if (import.meta.main) {
  await runStandalone('indexing', 'bench_indexing', {
    embedded: async (db) => indexingRows(await benchIndexing(db, 'PGlite')),
    real: async (db) => indexingRows(await benchIndexing(db, 'PostgreSQL 15')),
    skipped: (reason) => indexingRows({ skipped: reason, where: 'PostgreSQL 15' }),
  });
}

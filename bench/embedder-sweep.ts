/**
 * The local model's settings, measured (issue 24, item 5): chunks/s of the bare model for each
 * number of onnxruntime threads (EMBEDDING_THREADS) and batch size (EMBEDDING_BATCH_SIZE), at the
 * AI service's niceness and at the API's (AI_THREAD_NICE 10 and 0), while the real app answers an
 * open-loop probe (`GET /healthz` and workspaces.list every 20 ms each, latency-probe.ts) whose p99
 * is reported beside each figure, against its p99 idle. Then, with every core, batches of 16 and
 * niceness 10, texts of mixed lengths embedded in one request (the embedder sorts them, so a batch holds texts of one length)
 * against the same texts a batch per request in their own order; and the service's own setup, a
 * copy of the model per core with one onnxruntime thread each (LocalModelSetup.copies), on the prose.
 *
 * The model runs as the AI service runs it: createLocalEmbedder, its worker thread, at the given
 * niceness; it is in this process, the app (with its embedded database) in this process too, as
 * `serve` has them on one machine, and the probe in a child. The texts are the 266 chunks of
 * prose.ts's 160 KB document (about 1 000 characters each, as indexing makes them). Each setting
 * after a warm-up batch; settings in one order, then the first of the 2-thread settings again at the end to show drift.
 * A measurement, not a test.
 *   node bench/embedder-sweep.ts
 */
import { availableParallelism } from 'node:os';
import { createLocalEmbedder, type LocalModelSetup } from '../src/ai-service/embedder.ts';
import { DEFAULT_MODEL_DIR } from '../src/ai-service/model-files.ts';
import type { Database } from '../src/db/connection.ts';
import { chunkText } from '../src/jobs/chunking.ts';
import { startProbe, summary } from './api-latency.ts';
import { createTenant, forkAiService, startDocumentApp } from './document-app.ts';
import type { ProbeTarget } from './latency-probe.ts';
import { proseDocument } from './prose.ts';
import { logger, openBenchDatabase } from './support.ts';

export interface SweepRow {
  setup: LocalModelSetup;
  order: 'sorted' | 'as given';
  texts: string;
  chunksPerSecond: number;
  /** p99 of workspaces.list while the model ran, and idle, ms. */
  p99: number;
  idleP99: number;
}

export interface SweepResult {
  rows: SweepRow[];
  /** The fastest setting's chunks/s (sorted, prose): what indexing is compared with. */
  best: SweepRow;
}

export async function benchEmbedderSweep(db: Database): Promise<SweepResult> {
  const ai = await forkAiService();
  const app = await startDocumentApp(db, ai);
  const probe = startProbe();
  try {
    const tenant = await createTenant(db, { name: 'Embedder sweep' });
    const owner = tenant.users[0]!;
    const targets: ProbeTarget[] = [{ name: 'workspaces.list', url: `${app.url}/api/v1/workspaces?organizationId=${tenant.organizationId}`, headers: { authorization: `Bearer ${owner.token}` } }];
    await probe.window(targets, 2000).result;
    const idleP99 = summary(await probe.window(targets, 8000).result)['workspaces.list']!.p99;
    console.log(`  workspaces.list idle p99 ${idleP99.toFixed(1)} ms`);

    const prose = chunkText(proseDocument(160_000));
    // Mixed lengths: each chunk cut to one of six lengths, in a fixed scattered order.
    const cuts = [1000, 120, 600, 250, 800, 400];
    const mixed = prose.map((text, i) => text.slice(0, cuts[(i * 7) % cuts.length]));
    const cores = availableParallelism();
    const threadCounts = [...new Set([1, 2, cores])].filter((threads) => threads <= cores);
    const settings: { setup: LocalModelSetup; order: SweepRow['order']; texts: 'prose' | 'mixed' }[] = [];
    for (const nice of [10, 0]) {
      for (const threads of threadCounts) for (const batchSize of [8, 16, 32]) settings.push({ setup: { threads, batchSize, nice }, order: 'sorted', texts: 'prose' });
    }
    // Every core, batches of 16, niceness 10: the setting the indexing figures of 2026-11-27 were measured at.
    const fast: LocalModelSetup = { threads: cores, batchSize: 16, nice: 10 };
    settings.push({ setup: fast, order: 'sorted', texts: 'mixed' }, { setup: fast, order: 'as given', texts: 'mixed' });
    settings.push({ setup: fast, order: 'sorted', texts: 'prose' });
    // The service's setup (createEmbedder): a copy of the model per core, one onnxruntime thread each.
    if (cores > 1) settings.push({ setup: { threads: 1, copies: cores, batchSize: 16, nice: 10 }, order: 'sorted', texts: 'prose' });

    const rows: SweepRow[] = [];
    for (const { setup, order, texts: which } of settings) {
      const texts = which === 'prose' ? prose : mixed;
      const embedder = createLocalEmbedder(DEFAULT_MODEL_DIR, setup, logger);
      try {
        await embedder.embed(texts.slice(0, setup.batchSize * (setup.copies ?? 1))); // the load and a first batch (each copy's)
        const window = probe.window(targets, 600_000);
        const started = performance.now();
        if (order === 'sorted') await embedder.embed(texts);
        else for (let i = 0; i < texts.length; i += setup.batchSize) await embedder.embed(texts.slice(i, i + setup.batchSize));
        const seconds = (performance.now() - started) / 1000;
        window.stop();
        const p99 = summary(await window.result)['workspaces.list']!.p99;
        const row: SweepRow = { setup, order, texts: which, chunksPerSecond: texts.length / seconds, p99, idleP99 };
        rows.push(row);
        console.log(`  ${label(row)}: ${row.chunksPerSecond.toFixed(1)} chunks/s; workspaces.list p99 ${p99.toFixed(1)} ms (${(p99 / idleP99).toFixed(2)} × idle)`);
      } finally {
        await embedder.close();
      }
    }
    const best = rows.filter((row) => row.texts === 'prose').reduce((a, b) => (b.chunksPerSecond > a.chunksPerSecond ? b : a));
    return { rows, best };
  } finally {
    probe.close();
    await app.close();
    await ai.close();
  }
}

function label(row: SweepRow): string {
  const { threads, copies = 1, batchSize, nice } = row.setup;
  return `${copies > 1 ? `${copies} copies × ` : ''}${threads} thread${threads > 1 ? 's' : ''}, batch ${batchSize}, nice ${nice}, ${row.texts} ${row.order}`;
}

/** Rows for bench/index.ts's table. */
export function sweepRows(result: SweepResult): string[][] {
  return [
    [
      'local model: best setting (prose, sorted)',
      `${result.best.chunksPerSecond.toFixed(1)} chunks/s (${label(result.best)}); workspaces.list p99 ${(result.best.p99 / result.best.idleP99).toFixed(2)} × idle`,
      '',
    ],
    ...result.rows.map((row) => [`  ${label(row)}`, `${row.chunksPerSecond.toFixed(1)} chunks/s; p99 ${row.p99.toFixed(1)} ms (${(row.p99 / row.idleP99).toFixed(2)} × idle)`, '']),
  ];
}

if (import.meta.main) {
  const db = await openBenchDatabase();
  try {
    const result = await benchEmbedderSweep(db);
    for (const [measure, value] of sweepRows(result)) console.log(`${measure} | ${value}`);
  } finally {
    await db.close();
  }
}

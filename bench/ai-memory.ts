/**
 * The AI service's memory with the local model loaded: `node src/main.ts ai` as its own process
 * (forkAiService, as `serve` starts it), its resident set (VmRSS in /proc/<pid>/status) once it
 * has settled after its start (the model loads in its embedding thread right away), then after
 * embedding a few hundred chunks of prose over HTTP in the job's batches of 32 (VmRSS, and the
 * peak VmHWM over its life). Baseline: a bare `node -e` process of the same Node, read the same
 * way. Reports MiB and the difference; no aim, a figure to watch (docs/benchmarks.md).
 * A measurement, not a test. Linux only (/proc).
 *   node bench/ai-memory.ts
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createAiClient } from '../src/ai-service/client.ts';
import { chunkText } from '../src/jobs/chunking.ts';
import { forkAiService, memoryOf } from './document-app.ts';
import { proseDocument } from './prose.ts';

const EMBED_BATCH = 32;

export interface AiMemoryResult {
  /** MiB. */
  bareRss: number;
  idleRss: number;
  afterRss: number;
  peak: number;
  chunks: number;
}

/** Reads `pid`'s VmRSS every 250 ms until two readings in a row differ by less than 1 MiB (at most `maxMs`). */
async function settled(pid: number, maxMs = 8000): Promise<number> {
  let last = (await memoryOf(pid)).rss;
  const deadline = performance.now() + maxMs;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = (await memoryOf(pid)).rss;
    if (Math.abs(now - last) < 1 || performance.now() > deadline) return now;
    last = now;
  }
}

export async function benchAiMemory({ bytes = 160_000 } = {}): Promise<AiMemoryResult> {
  const bare = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  let bareRss: number;
  try {
    await new Promise((resolve) => setTimeout(resolve, 500));
    bareRss = await settled(bare.pid!);
  } finally {
    bare.kill();
    await once(bare, 'exit').catch(() => undefined);
  }

  const ai = await forkAiService();
  try {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idleRss = await settled(ai.pid);
    const client = createAiClient({ url: ai.url, apiKey: ai.apiKey });
    const chunks = chunkText(proseDocument(bytes));
    for (let i = 0; i < chunks.length; i += EMBED_BATCH) await client.embed(chunks.slice(i, i + EMBED_BATCH));
    const after = await memoryOf(ai.pid);
    const result = { bareRss, idleRss, afterRss: after.rss, peak: after.peak, chunks: chunks.length };
    console.log(`  bare node ${bareRss.toFixed(0)} MiB; AI service idle ${idleRss.toFixed(0)} MiB, after ${chunks.length} chunks ${after.rss.toFixed(0)} MiB (peak ${after.peak.toFixed(0)} MiB)`);
    return result;
  } finally {
    await ai.close();
  }
}

/** Rows for bench/index.ts's table. */
export function aiMemoryRows(result: AiMemoryResult | { skipped: string }): string[][] {
  if ('skipped' in result) return [['AI service RSS with the model', `skipped: ${result.skipped}`, '']];
  const over = (value: number) => `+${(value - result.bareRss).toFixed(0)}`;
  return [
    ['AI service RSS idle / after embedding, MiB', `${result.idleRss.toFixed(0)} / ${result.afterRss.toFixed(0)}  (peak ${result.peak.toFixed(0)}; ${result.chunks} chunks)`, ''],
    ['  over a bare node process, MiB', `${over(result.idleRss)} / ${over(result.afterRss)}  (peak ${over(result.peak)}; bare ${result.bareRss.toFixed(0)})`, ''],
  ];
}

if (import.meta.main) {
  console.log('AI service memory:');
  const rows = process.platform === 'linux' ? aiMemoryRows(await benchAiMemory()) : aiMemoryRows({ skipped: 'needs /proc (Linux)' });
  for (const row of rows) console.log(row.join('  |  '));
}

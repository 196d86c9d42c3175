/**
 * The kept chunking thread (src/jobs/chunker.ts) against chunkText inline, per document:
 *   - wall time to the chunks (what the job waits), thread and inline;
 *   - the longest the caller's event loop was held: inline that is the whole chunking; with the
 *     thread, posting the text and receiving the chunks (a 1-ms timer on this loop measures the
 *     gaps between its ticks);
 * for a typical document (the 266-chunk prose of bench/indexing.ts, ~200 KB), a small one (5 KB) and
 * the hostile shape of issue 23 (2 million characters, none a space). Medians of 15 runs after 3 of
 * warm-up. A measurement, not a test: nothing fails.
 *   node bench/chunking.ts
 */
import { createChunker } from '../src/jobs/chunker.ts';
import { chunkText } from '../src/jobs/chunking.ts';
import { proseDocument } from './prose.ts';
import { median } from './statistics.ts';

const RUNS = 15;
/** One kept thread, as the worker has (its start is in the warm-up runs). */
const chunker = createChunker();
const WARM_UP = 3;

/** Runs `work` while a 1-ms interval ticks; answers its time and the longest gap between ticks past 1 ms. */
async function measure(work: () => Promise<unknown>): Promise<{ ms: number; heldMs: number }> {
  let last = performance.now();
  let held = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    held = Math.max(held, now - last - 1);
    last = now;
  }, 1);
  await new Promise((resolve) => setTimeout(resolve, 5));
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  // One more tick, so a block that ended the work is seen.
  await new Promise((resolve) => setTimeout(resolve, 3));
  clearInterval(ticker);
  return { ms, heldMs: Math.max(0, held) };
}

async function bench(name: string, text: string): Promise<void> {
  const inline: { ms: number; heldMs: number }[] = [];
  const thread: { ms: number; heldMs: number }[] = [];
  for (let i = 0; i < WARM_UP + RUNS; i += 1) {
    const a = await measure(async () => chunkText(text));
    const b = await measure(() => chunker.chunk(text));
    if (i >= WARM_UP) {
      inline.push(a);
      thread.push(b);
    }
  }
  const med = (rows: { ms: number; heldMs: number }[], key: 'ms' | 'heldMs') => median(rows.map((row) => row[key])).toFixed(1);
  console.log(
    `${name} (${text.length.toLocaleString('en-US')} characters, ${chunkText(text).length} chunks): ` +
      `inline ${med(inline, 'ms')} ms (loop held ${med(inline, 'heldMs')} ms), thread ${med(thread, 'ms')} ms (loop held ${med(thread, 'heldMs')} ms)`,
  );
}

await bench('typical: prose of bench/indexing.ts', proseDocument(200_000));
await bench('small: 5 KB of prose', proseDocument(5_000));
await bench('hostile: 2 M characters, no space', '\u0120'.repeat(2_000_000));
await chunker.close();

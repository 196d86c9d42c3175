/**
 * What one document's parsing thread costs the AI service: `node src/main.ts ai` as `serve` starts
 * it (forkAiService), a small PDF, DOCX and HTML document (test/fixtures) extracted one after the
 * other over HTTP, and the service process's CPU time (utime + stime in /proc/<pid>/stat, every
 * thread of it) per document. Each document is parsed in a new thread (src/ai-service/extractor.ts),
 * which loads its modules again; src/main.ts hands V8's code cache on disk to those threads through
 * NODE_COMPILE_CACHE. Baseline: the same service with NODE_DISABLE_COMPILE_CACHE=1, whose threads
 * compile (and strip the types of) every module afresh. Reports milliseconds of CPU per document
 * and the ratio; aim ≤ 0.8 (docs/benchmarks.md). A measurement, not a test. Linux only (/proc).
 *   node bench/extract-thread.ts
 */
import { readFile } from 'node:fs/promises';
import { createAiClient } from '../src/ai-service/client.ts';
import { forkAiService } from './document-app.ts';
import { cpuSeconds } from './soak-sample.ts';

const FIXTURES = [
  ['report.pdf', 'application/pdf'],
  ['memo.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
  ['page.html', 'text/html'],
] as const;
const ROUNDS = 15;
export const EXTRACT_THREAD_AIM = 0.8;

/** Milliseconds of the service's CPU per document, after one warm-up round (the cache filled, the first thread's costs paid). */
async function perDocument(env: Record<string, string>): Promise<number> {
  const ai = await forkAiService(env);
  try {
    const client = createAiClient({ url: ai.url, apiKey: ai.apiKey });
    const documents = await Promise.all(FIXTURES.map(async ([name, type]) => ({ bytes: await readFile(new URL(`../test/fixtures/${name}`, import.meta.url)), type })));
    const round = async () => {
      for (const { bytes, type } of documents) await client.extract(bytes, type);
    };
    await round();
    const before = await cpuSeconds(ai.pid);
    for (let i = 0; i < ROUNDS; i++) await round();
    return (((await cpuSeconds(ai.pid)) - before) * 1000) / (ROUNDS * documents.length);
  } finally {
    await ai.close();
  }
}

export async function extractThreadRows(): Promise<string[][]> {
  if (process.platform !== 'linux') return [['extraction thread, CPU per document', 'skipped: needs /proc (Linux)', '']];
  const uncached = await perDocument({ NODE_DISABLE_COMPILE_CACHE: '1' });
  const cached = await perDocument({});
  const ratio = cached / uncached;
  console.log(`  CPU per document (PDF, DOCX, HTML in turn): ${cached.toFixed(0)} ms with the code cache, ${uncached.toFixed(0)} ms without; ratio ${ratio.toFixed(2)}`);
  return [['extraction thread, CPU per document vs without the code cache', `${ratio.toFixed(2)}  (${cached.toFixed(0)} / ${uncached.toFixed(0)} ms)`, `≤ ${EXTRACT_THREAD_AIM}`]];
}

if (import.meta.main) {
  console.log('extraction thread:');
  for (const row of await extractThreadRows()) console.log(`  ${row.join('  ')}`);
}

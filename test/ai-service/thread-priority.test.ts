/**
 * The AI service's heavy threads give way to the API (thread-priority.ts, AI_THREAD_NICE): the
 * embedding thread and the pool onnxruntime starts from it run at the configured niceness, the
 * process's main thread (the service's event loop) at its own. Read from /proc: Linux keeps the
 * niceness per thread, which is what the service relies on.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalEmbedder } from '../../src/ai-service/embedder.ts';
import { DEFAULT_MODEL_DIR } from '../../src/ai-service/model-files.ts';
import { loadConfig } from '../../src/config.ts';
import { logger } from './support.ts';

/** Each thread of this process: its id, name and niceness (field 19 of /proc/<pid>/task/<tid>/stat). */
function threads(): { tid: string; name: string; nice: number }[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { tid, name: readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim(), nice: Number(fields[16]) };
  });
}

describe.runIf(process.platform === 'linux')("the embedding threads' priority", () => {
  const defaults = loadConfig({ AI_THREAD_NICE: '10' }).ai;
  // The process may hold threads of earlier test files (vitest reuses its workers): only the
  // threads started from here on are this embedder's.
  const before = new Set(readdirSync('/proc/self/task'));
  const embedder = createLocalEmbedder(DEFAULT_MODEL_DIR, { ...defaults.embedding, nice: defaults.threadNice }, logger);
  afterAll(() => embedder.close());

  it("runs the documents' model threads at AI_THREAD_NICE (here 10), the queries' thread and the event loop at 0", async () => {
    expect(defaults.threadNice).toBe(10);
    // More than QUERY_TEXTS texts: the documents' thread. One text: the queries' thread.
    await embedder.embed(Array.from({ length: 8 }, () => 'a text long enough to run the model on every thread of its pool '.repeat(8)));
    await embedder.embed(['a search query']);
    const all = threads();
    const started = all.filter((thread) => !before.has(thread.tid));
    const model = started.filter((thread) => thread.name === 'embedder');
    // The worker thread itself, and onnxruntime's pool (one thread fewer than EMBEDDING_THREADS: the caller works too).
    expect(model.length).toBeGreaterThanOrEqual(defaults.embedding.threads);
    expect(model.map((thread) => thread.nice)).toEqual(model.map(() => 10));
    // comm is cut at 15 characters: `embedder-querie`.
    const queries = started.filter((thread) => thread.name.startsWith('embedder-quer'));
    expect(queries.length).toBeGreaterThanOrEqual(1);
    expect(queries.map((thread) => thread.nice)).toEqual(queries.map(() => 0));
    // The main thread's id is the process's: the list is in id order, and ids wrap around
    // (pid_max), so a thread started later can come first.
    expect(all.find((thread) => thread.tid === String(process.pid))).toMatchObject({ nice: 0 });
  });
});

/**
 * chunkText off the caller's event loop: each text is chunked in a worker thread of its own
 * (chunking-thread.ts). The job worker runs inside the API's process on the embedded database
 * (WORKER=inline), so a text chunked there would hold every request for as long as it takes:
 * before chunking was linear (chunking.ts), 2 million characters with no space took ~19 s; now
 * ~10 ms, but the text is whatever a client uploaded. The thread has the discipline of the AI
 * service's extraction threads (ai-service/extractor.ts): a heap cap and a time limit that
 * terminates it, so even a bug that made chunking slow or hungry again would fail one job, not
 * stall the API.
 *
 * Cost (bench/chunking.ts, 2 cores): a thread per text answers in ~65-80 ms against 2 ms inline
 * for a typical 200 KB document, and holds the caller's loop ~5 ms (starting the worker, taking
 * the chunks back) where inline chunking held it 2 ms; for 2 million characters with no space,
 * ~7 ms held against 8 ms. Small beside the seconds of embedding that follow, and bounded whatever
 * the text: a thread per call rather than a kept one, so nothing a text leaves behind reaches the
 * next, and there is no thread to restart after a kill or to keep alive.
 */
import { Worker } from 'node:worker_threads';
import { DEFAULT_CHUNKING, type ChunkOptions } from './chunking.ts';
import type { ChunkingInput, ChunkingMessage } from './chunking-thread.ts';
import { JobFailure } from './job-failure.ts';

export interface ChunkingLimits {
  /** The thread is terminated this long after it starts. */
  timeoutMs: number;
  /** V8's cap on the thread's heap (the text, its cleaned copy and its chunks: a few times the text). */
  memoryMb: number;
}

/**
 * Generous for the longest text the service stores (MAX_EXTRACTED_CHARACTERS, 2 million by
 * default: chunked in ~15 ms, ~30 MB of strings), so only a broken chunker meets them.
 */
export const CHUNKING_LIMITS: ChunkingLimits = { timeoutMs: 30_000, memoryMb: 256 };

const THREAD_ENTRY = new URL('./chunking-thread.ts', import.meta.url);

/** chunkText(text, options) in a thread; a JobFailure when the thread runs out of time or memory. */
export function chunkInThread(text: string, options: ChunkOptions = DEFAULT_CHUNKING, limits: ChunkingLimits = CHUNKING_LIMITS): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const input: ChunkingInput = { text, options };
    const worker = new Worker(THREAD_ENTRY, {
      workerData: input,
      resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
      name: 'chunking',
    });
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate().catch(() => {}).then(outcome);
    };
    const timer = setTimeout(() => {
      finish(() => reject(new JobFailure(`The document's text could not be split into chunks within ${limits.timeoutMs / 1000} s.`)));
    }, limits.timeoutMs);
    worker.on('message', (message: ChunkingMessage) => {
      if (message.kind === 'done') finish(() => resolve(message.chunks));
      else finish(() => reject(new Error('the chunking thread failed', { cause: threadError(message.detail) })));
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        finish(() => reject(new JobFailure(`Splitting the document's text into chunks needed more than ${limits.memoryMb} MiB of memory.`, { cause: error })));
      } else {
        finish(() => reject(new Error('the chunking thread failed', { cause: error })));
      }
    });
    worker.on('exit', (code) => finish(() => reject(new Error(`the chunking thread exited with code ${code} before answering`))));
  });
}

/** An error of the thread, rebuilt from its stack for the log. */
function threadError(stack: string): Error {
  return Object.assign(new Error(stack.split('\n', 1)[0]), { stack });
}

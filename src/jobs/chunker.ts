/**
 * chunkSpans (chunkText with each chunk's range) off the caller's event loop, in a worker thread kept for the next text
 * (chunking-thread.ts). The job worker runs inside the API's process on the embedded database
 * (WORKER=inline), so a text chunked there would hold every request for as long as it takes:
 * before chunking was linear (chunking.ts), 2 million characters with no space took ~19 s; now
 * ~10 ms, but the text is whatever a client uploaded. The thread has the discipline of the AI
 * service's extraction threads (ai-service/extractor.ts): a heap cap and a time limit that
 * terminates it, so even a bug that made chunking slow or hungry again would fail one job, not
 * stall the API.
 *
 * One thread, kept: a thread started per text cost ~65 ms of CPU each (starting Node's isolate and
 * loading the module), which under the soak's load was 13% of a core in the worker process and
 * took the API's throughput down with it; a kept thread answers a typical text in about a
 * millisecond. Texts are chunked one at a time in arrival order, each with its own time limit
 * counted from when the thread starts on it; a thread that runs over or out of memory is
 * terminated and the next text gets a fresh one. The thread is unreferenced while idle, so it
 * never keeps a process alive.
 */
import { Worker } from 'node:worker_threads';
import { DEFAULT_CHUNKING, type ChunkOptions, type ChunkSpan } from './chunking.ts';
import type { ChunkingMessage, ChunkingRequest } from './chunking-thread.ts';
import { JobFailure } from './job-failure.ts';

export interface ChunkingLimits {
  /** A text's thread is terminated this long after it starts on the text. */
  timeoutMs: number;
  /** V8's cap on the thread's heap (the text, its cleaned copy and its chunks: a few times the text). */
  memoryMb: number;
}

/**
 * Generous for the longest text the service stores (MAX_EXTRACTED_CHARACTERS, 2 million by
 * default: chunked in ~15 ms, ~30 MB of strings), so only a broken chunker meets them.
 */
export const CHUNKING_LIMITS: ChunkingLimits = { timeoutMs: 30_000, memoryMb: 256 };

export interface Chunker {
  /** chunkSpans(text, options) in the thread; a JobFailure when the thread runs out of time or memory. */
  chunk(text: string, options?: ChunkOptions): Promise<ChunkSpan[]>;
  /** Fails what is waiting and stops the thread. */
  close(): Promise<void>;
}

const THREAD_ENTRY = new URL('./chunking-thread.ts', import.meta.url);

interface Pending {
  request: ChunkingRequest;
  resolve(chunks: ChunkSpan[]): void;
  reject(error: Error): void;
}

export function createChunker(limits: ChunkingLimits = CHUNKING_LIMITS): Chunker {
  const waiting: Pending[] = [];
  let thread: Worker | null = null;
  let current: { pending: Pending; timer: NodeJS.Timeout } | null = null;
  let ids = 0;
  let closed = false;

  const start = (): Worker => {
    const worker = new Worker(THREAD_ENTRY, {
      resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
      name: 'chunking',
    });
    worker.on('message', (message: ChunkingMessage) => {
      if (!current || message.id !== current.pending.request.id) return;
      const { pending } = finishCurrent();
      if (message.kind === 'done') pending.resolve(message.chunks);
      else pending.reject(new Error('the chunking thread failed', { cause: threadError(message.detail) }));
      next();
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (thread !== worker) return;
      thread = null;
      if (!current) return;
      const { pending } = finishCurrent();
      pending.reject(
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new JobFailure(`Splitting the document's text into chunks needed more than ${limits.memoryMb} MiB of memory.`, { cause: error })
          : new Error('the chunking thread failed', { cause: error }),
      );
      next();
    });
    worker.on('exit', (code) => {
      if (thread !== worker) return;
      thread = null;
      if (!current) return;
      const { pending } = finishCurrent();
      pending.reject(new Error(`the chunking thread exited with code ${code} before answering`));
      next();
    });
    return worker;
  };

  const finishCurrent = () => {
    const finished = current!;
    clearTimeout(finished.timer);
    current = null;
    return finished;
  };

  /** Sends the next waiting text to the thread (starting one if needed). */
  const next = () => {
    if (current || closed) return;
    const pending = waiting.shift();
    if (!pending) {
      thread?.unref();
      return;
    }
    thread ??= start();
    thread.ref();
    const worker = thread;
    const timer = setTimeout(() => {
      if (current?.pending !== pending) return;
      finishCurrent();
      // Terminated, not asked: a loop that runs over answers nothing. The next text gets a fresh thread.
      thread = null;
      void worker.terminate().catch(() => {});
      pending.reject(new JobFailure(`The document's text could not be split into chunks within ${limits.timeoutMs / 1000} s.`));
      next();
    }, limits.timeoutMs);
    current = { pending, timer };
    worker.postMessage(pending.request);
  };

  return {
    chunk(text, options = DEFAULT_CHUNKING) {
      if (closed) return Promise.reject(new Error('the chunker is closed'));
      return new Promise((resolve, reject) => {
        waiting.push({ request: { id: ++ids, text, options }, resolve, reject });
        next();
      });
    },
    async close() {
      closed = true;
      const stopping = new Error('the chunker is closed');
      for (const pending of waiting.splice(0)) pending.reject(stopping);
      if (current) finishCurrent().pending.reject(stopping);
      const worker = thread;
      thread = null;
      await worker?.terminate();
    },
  };
}

/** An error of the thread, rebuilt from its stack for the log. */
function threadError(stack: string): Error {
  return Object.assign(new Error(stack.split('\n', 1)[0]), { stack });
}

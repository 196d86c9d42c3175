/**
 * Extraction with limits (docs/ai-service.md "Limits"): every document but an image is parsed in a
 * worker thread of its own (extract-thread.ts), never on the service's event loop, so a hostile
 * document costs one request a 422 and nothing else.
 *
 * - Memory: V8 caps the thread's heap at EXTRACT_MEMORY_MB, and the thread is terminated when its
 *   heap and its buffers (ArrayBuffers, which V8's cap does not count: inflated streams live
 *   there) together pass that amount, checked every 100 ms.
 * - Time: the thread is terminated EXTRACT_TIMEOUT_SECONDS after it starts. terminate() stops even
 *   a synchronous loop, which a signal or a promise race could not.
 * - At most THREADS documents are parsed at once; the rest wait in arrival order, and the wait is
 *   not counted in their time limit: a document is refused for its own cost, not for the queue's.
 *   The caller's own timeout (the client's 120 s for extract) bounds the wait.
 * - Images stay in the one tesseract.js thread (ocr.ts), after their header is checked against
 *   OCR_MAX_PIXELS, with OCR_TIMEOUT_SECONDS per recognition.
 * - Plain text, Markdown and CSV up to 256 KiB have no parser to guard: they are decoded here.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ExtractionLimits } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { ThreadInput, ThreadMessage } from './extract-thread.ts';
import { documentName, normaliseText, readDocument, withinCharacters, type DocumentType } from './extraction.ts';
import { HttpError } from './http-exchange.ts';
import { jpegSize, pngSize } from './image-header.ts';
import { OcrTimeoutError, OcrUnavailableError, createOcrEngine } from './ocr.ts';
import type { ExtractContentType, ExtractResult } from './protocol.ts';
import { refusals, unreadable } from './refusals.ts';

export interface Extractor {
  /** `type` is what documentType() (extraction.ts) answers for the request's Content-Type. */
  extract(bytes: Uint8Array, type: { type: ExtractContentType; charset: string | undefined }): Promise<ExtractResult>;
  /** The OCR engine's description and problem, for the health report (as OcrEngine has them). */
  readonly ocr: { readonly description: string | null; readonly problem: string | null };
  /** Refuses new documents, stops the threads still parsing (their requests get 503) and the OCR worker. */
  close(): Promise<void>;
}

export interface ExtractorOptions {
  limits: ExtractionLimits;
  logger: Logger;
  /** Documents parsed at once; default THREADS. */
  threads?: number;
}

/**
 * One thread per core, at most two: the job worker sends WORKER_CONCURRENCY (default 2) documents
 * at once, and each thread may use EXTRACT_MEMORY_MB.
 */
export const THREADS = Math.max(1, Math.min(2, availableParallelism()));

const THREAD_ENTRY = new URL('./extract-thread.ts', import.meta.url);
/** Types with no parser: their bytes are the text. */
const PLAIN_TYPES = new Set<ExtractContentType>(['text/plain', 'text/markdown', 'text/csv']);
/** Plain text up to this size is read on the service's thread; larger goes to a thread with the limits. */
const INLINE_PLAIN_BYTES = 256 * 1024;
const MEMORY_CHECK_MS = 100;
const MIB = 1024 * 1024;

export function createExtractor(options: ExtractorOptions): Extractor {
  const { limits, logger } = options;
  const ocr = createOcrEngine(logger);
  const slots = createSlots(options.threads ?? THREADS);
  const running = new Set<Worker>();
  let closed = false;
  const shuttingDown = () => new HttpError(503, 'The AI service is shutting down.');

  const readImage = async (bytes: Uint8Array, type: 'image/png' | 'image/jpeg'): Promise<ExtractResult> => {
    const format = type === 'image/png' ? 'PNG' : 'JPEG';
    const size = type === 'image/png' ? pngSize(bytes) : jpegSize(bytes);
    if (!size || size.width === 0 || size.height === 0) throw unreadable(`The image is not a readable ${format} file.`);
    // Checked before decoding: a small file can declare a picture that decodes to gigabytes.
    if (size.width * size.height > limits.maxImagePixels) throw refusals.pixels(size.width, size.height, limits.maxImagePixels);
    let text;
    try {
      text = await ocr.recognize(bytes, limits.ocrTimeoutMs);
    } catch (error) {
      if (error instanceof OcrUnavailableError) throw new HttpError(503, 'Text recognition is unavailable.', { cause: error });
      if (error instanceof OcrTimeoutError) throw refusals.time('image', limits.ocrTimeoutMs, error);
      throw unreadable(`The ${format} image could not be read.`, error);
    }
    return { text: withinCharacters(normaliseText(text), limits.maxCharacters), pages: 1 };
  };

  const readInThread = (bytes: Uint8Array, type: DocumentType): Promise<ExtractResult> => new Promise((resolve, reject) => {
    if (closed) return reject(shuttingDown());
    // A buffer of the thread's own, moved rather than copied again; the request's may be a slice of Node's pool.
    const copy = new Uint8Array(bytes);
    const input: ThreadInput = { bytes: copy, ...type, limits };
    const worker = new Worker(THREAD_ENTRY, {
      workerData: input,
      transferList: [copy.buffer],
      resourceLimits: {
        maxOldGenerationSizeMb: limits.memoryMb,
        maxYoungGenerationSizeMb: Math.max(8, Math.min(64, Math.round(limits.memoryMb / 16))),
        stackSizeMb: 4,
      },
    });
    running.add(worker);
    let reading = false;
    let settled = false;
    // Answers once, after the thread is gone, so its memory is free before the slot is.
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(memoryCheck);
      void worker.terminate().catch(() => {}).then(() => {
        running.delete(worker);
        outcome();
      });
    };
    const name = documentName(type.type);
    const crashed = (cause: unknown) => {
      // Before the thread ran, the service is broken (its entry failed to load): a 500.
      if (!reading) return reject(new Error('the extraction thread failed to start', { cause }));
      reject(unreadable(`The ${name} could not be read.`, cause));
    };

    const timer = setTimeout(() => {
      finish(() => reject(refusals.time('document', limits.timeoutMs, new Error(`the extraction thread ran over ${limits.timeoutMs} ms and was terminated`))));
    }, limits.timeoutMs);
    const memoryCheck = setInterval(() => {
      worker.getHeapStatistics().then((heap) => {
        if (heap.used_heap_size + heap.external_memory <= limits.memoryMb * MIB) return;
        const used = `heap ${Math.round(heap.used_heap_size / MIB)} MiB, buffers ${Math.round(heap.external_memory / MIB)} MiB`;
        finish(() => reject(refusals.memory(limits.memoryMb, new Error(`the extraction thread used ${used}`))));
      }, () => {});
    }, MEMORY_CHECK_MS);

    worker.on('message', (message: ThreadMessage) => {
      switch (message.kind) {
        case 'reading': reading = true; break;
        case 'done': finish(() => resolve(message.result)); break;
        case 'refused': finish(() => reject(new HttpError(message.status, message.message, { cause: message.detail === null ? undefined : threadError(message.detail) }))); break;
        case 'failed': finish(() => reject(new Error('the extraction thread failed', { cause: threadError(message.detail) }))); break;
      }
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') finish(() => reject(refusals.memory(limits.memoryMb, error)));
      else finish(() => crashed(error));
    });
    worker.on('exit', (code) => finish(() => (closed ? reject(shuttingDown()) : crashed(new Error(`the thread exited with code ${code}`)))));
  });

  return {
    async extract(bytes, type) {
      if (closed) throw shuttingDown();
      if (type.type === 'image/png' || type.type === 'image/jpeg') return readImage(bytes, type.type);
      // A small plain-text document is only decoded and normalised, in linear time and a few
      // milliseconds: a thread of its own would cost more than reading it (about 60-130 ms).
      if (PLAIN_TYPES.has(type.type) && bytes.byteLength <= INLINE_PLAIN_BYTES) return readDocument(bytes, type, limits);
      return slots.run(() => readInThread(bytes, type));
    },
    ocr: { description: ocr.description, problem: ocr.problem },
    async close() {
      closed = true;
      slots.cancelWaiting(shuttingDown());
      const threads = [...running];
      if (threads.length) logger.warn({ threads: threads.length }, 'extraction threads stopped by close');
      await Promise.all([...threads.map((worker) => worker.terminate()), ocr.close()]);
    },
  };
}

/** An error of the thread, rebuilt from its stack for the log. */
function threadError(stack: string): Error {
  return Object.assign(new Error(stack.split('\n', 1)[0]), { stack });
}

/** At most `size` tasks at once; the others wait in arrival order. */
function createSlots(size: number) {
  let free = size;
  const waiting: Array<{ go: () => void; cancel: (reason: unknown) => void }> = [];
  return {
    async run<T>(task: () => Promise<T>): Promise<T> {
      if (free > 0) free -= 1;
      else await new Promise<void>((go, cancel) => waiting.push({ go, cancel }));
      try {
        return await task();
      } finally {
        const next = waiting.shift();
        if (next) next.go();
        else free += 1;
      }
    },
    cancelWaiting(reason: unknown) {
      for (const waiter of waiting.splice(0)) waiter.cancel(reason);
    },
  };
}

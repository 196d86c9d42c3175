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
 * - At most THREADS documents are parsed at once; the rest wait in a fair queue (fair-queue.ts:
 *   organizations take turns, arrival order within one), bounded (a full queue answers 503 with
 *   Retry-After), and the wait is not counted in their time limit: a document is refused for its
 *   own cost, not for the queue's. A caller that goes away (its timeout, the client's 120 s for
 *   extract) takes its document out of the queue, or has its thread terminated.
 * - Images stay in the one tesseract.js thread (ocr.ts), after their header is checked against
 *   OCR_MAX_PIXELS, with OCR_TIMEOUT_SECONDS per recognition and EXTRACT_MEMORY_MB of WebAssembly
 *   memory (ocr-memory.ts), behind a fair queue of their own.
 * - Plain text, Markdown and CSV up to 256 KiB have no parser to guard: they are decoded here.
 *
 * Spans (spans.ts): `ai.extract.thread` for a document's run in its thread (type, bytes, pages and
 * characters out), `ai.extract.inline` for plain text decoded here; OCR's are ocr.ts's.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ExtractionLimits } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { ThreadInput, ThreadMessage } from './extract-thread.ts';
import { documentName, normaliseText, readDocument, withinCharacters, type DocumentType } from './extraction.ts';
import { HttpError } from './http-exchange.ts';
import { createFairQueue, NO_ORGANIZATION, type QueueStats } from './fair-queue.ts';
import { jpegSize, pngSize } from './image-header.ts';
import { detectLanguage } from './language.ts';
import { OcrMemoryError, OcrTimeoutError, OcrUnavailableError, createOcrEngine } from './ocr.ts';
import type { ExtractContentType, ExtractResult } from './protocol.ts';
import { refusals, unreadable } from './refusals.ts';
import { inAiSpan } from './spans.ts';
import { setAttributes, type Span } from '../telemetry/tracing.ts';

/** Who asks, for the queues: whose turn it is, and whether the caller is still there. */
export interface ExtractCall {
  /** The organization the document belongs to (X-Organization-Id); without it, a group of its own. */
  organization?: string | undefined;
  /** Aborts when the caller goes away: a waiting document leaves the queue, a running thread is terminated. */
  signal?: AbortSignal | undefined;
}

export interface ExtractorStats {
  /** The extraction threads' queue; `threads` counts the threads alive now. */
  documents: QueueStats & { threads: number };
  images: QueueStats;
}

export interface Extractor {
  /** `type` is what documentType() (extraction.ts) answers for the request's Content-Type. */
  extract(bytes: Uint8Array, type: { type: ExtractContentType; charset: string | undefined }, call?: ExtractCall): Promise<ExtractResult>;
  stats(): ExtractorStats;
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
  /** The parsing threads' niceness (AI_THREAD_NICE; thread-priority.ts); default 0. */
  nice?: number;
  /** Waiting documents (and images) past which a request is refused; default QUEUE_BOUNDS. */
  maxWaiting?: number;
  maxWaitingPerOrganization?: number;
}

/**
 * Waiting work past which extraction answers 503 with Retry-After. The API's workers send
 * WORKER_CONCURRENCY (default 2) documents at once each, so a few workers fit in 8 per
 * organization; 32 in all is a quarter of an hour of slow documents at 2 threads, past which a
 * caller's 120 s timeout would only make it wait for nothing. Retry-After is about one document.
 */
export const QUEUE_BOUNDS = { maxWaiting: 32, maxWaitingPerOrganization: 8, documentsRetryAfterSeconds: 5, imagesRetryAfterSeconds: 10 };

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
  // OCR's WebAssembly memory is capped as an extraction thread's heap and buffers are (ocr-memory.ts).
  const ocr = createOcrEngine(logger, { memoryMb: limits.memoryMb });
  const maxWaiting = options.maxWaiting ?? QUEUE_BOUNDS.maxWaiting;
  const maxWaitingPerGroup = options.maxWaitingPerOrganization ?? QUEUE_BOUNDS.maxWaitingPerOrganization;
  const documents = createFairQueue({ capacity: options.threads ?? THREADS, maxWaiting, maxWaitingPerGroup, retryAfterSeconds: QUEUE_BOUNDS.documentsRetryAfterSeconds }, 'documents');
  // The one OCR engine recognizes one image at a time: its own FIFO would let one organization's
  // scans hold everyone else's, so the turns are taken here.
  const images = createFairQueue({ capacity: 1, maxWaiting, maxWaitingPerGroup, retryAfterSeconds: QUEUE_BOUNDS.imagesRetryAfterSeconds }, 'images');
  const running = new Set<Worker>();
  let closed = false;
  const shuttingDown = () => new HttpError(503, 'The AI service is shutting down.');

  const readImage = async (bytes: Uint8Array, type: 'image/png' | 'image/jpeg', call: ExtractCall): Promise<ExtractResult> => {
    const format = type === 'image/png' ? 'PNG' : 'JPEG';
    const size = type === 'image/png' ? pngSize(bytes) : jpegSize(bytes);
    if (!size || size.width === 0 || size.height === 0) throw unreadable(`The image is not a readable ${format} file.`);
    // Checked before decoding: a small file can declare a picture that decodes to gigabytes.
    if (size.width * size.height > limits.maxImagePixels) throw refusals.pixels(size.width, size.height, limits.maxImagePixels);
    let text;
    try {
      // A waiting image is dropped by the queue, a recognition under way by the engine (with its thread).
      text = await images.run(call.organization ?? NO_ORGANIZATION, (signal) => ocr.recognize(bytes, limits.ocrTimeoutMs, signal), call.signal);
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if (error instanceof OcrUnavailableError) throw new HttpError(503, 'Text recognition is unavailable.', { cause: error });
      if (error instanceof OcrTimeoutError) throw refusals.time('image', limits.ocrTimeoutMs, error);
      if (error instanceof OcrMemoryError) throw refusals.memory(limits.memoryMb, error);
      throw unreadable(`The ${format} image could not be read.`, error);
    }
    const recognized = withinCharacters(normaliseText(text), limits.maxCharacters);
    // On the service's loop, as the normalisation above: an image's text is short and the sample bounded (language.ts).
    return { text: recognized, pages: 1, language: detectLanguage(recognized) };
  };

  const readInThread = (bytes: Uint8Array, type: DocumentType, signal: AbortSignal | undefined, span: Span): Promise<ExtractResult> =>
    new Promise((resolve, reject) => {
      if (closed) return reject(shuttingDown());
      if (signal?.aborted) return reject(signal.reason);
      // A buffer of the thread's own, moved rather than copied again; the request's may be a slice of Node's pool.
      const copy = new Uint8Array(bytes);
      const input: ThreadInput = { bytes: copy, ...type, limits, nice: options.nice ?? 0 };
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
        signal?.removeEventListener('abort', callerGone);
        void worker
          .terminate()
          .catch(() => {})
          .then(() => {
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
        worker.getHeapStatistics().then(
          (heap) => {
            if (heap.used_heap_size + heap.external_memory <= limits.memoryMb * MIB) return;
            const used = `heap ${Math.round(heap.used_heap_size / MIB)} MiB, buffers ${Math.round(heap.external_memory / MIB)} MiB`;
            finish(() => reject(refusals.memory(limits.memoryMb, new Error(`the extraction thread used ${used}`))));
          },
          () => {},
        );
      }, MEMORY_CHECK_MS);

      // Nobody will read the text: the thread's core and memory go to the next document at once.
      const callerGone = () =>
        finish(() => {
          logger.info({ type: type.type, bytes: bytes.byteLength }, 'extraction thread terminated: the caller went away');
          reject(signal!.reason);
        });
      signal?.addEventListener('abort', callerGone, { once: true });

      worker.on('message', (message: ThreadMessage) => {
        switch (message.kind) {
          case 'reading':
            reading = true;
            // The thread's start (its modules loaded) ends here, the parse begins.
            if (span.isRecording()) span.addEvent('reading');
            break;
          case 'done':
            finish(() => resolve(message.result));
            break;
          case 'refused':
            finish(() => reject(new HttpError(message.status, message.message, { cause: message.detail === null ? undefined : threadError(message.detail) })));
            break;
          case 'failed':
            finish(() => reject(new Error('the extraction thread failed', { cause: threadError(message.detail) })));
            break;
        }
      });
      worker.on('error', (error: Error & { code?: string }) => {
        if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') finish(() => reject(refusals.memory(limits.memoryMb, error)));
        else finish(() => crashed(error));
      });
      worker.on('exit', (code) => finish(() => (closed ? reject(shuttingDown()) : crashed(new Error(`the thread exited with code ${code}`)))));
    });

  return {
    async extract(bytes, type, call = {}) {
      if (closed) throw shuttingDown();
      if (type.type === 'image/png' || type.type === 'image/jpeg') return readImage(bytes, type.type, call);
      // A small plain-text document is only decoded and normalised, in linear time and a few
      // milliseconds: a thread of its own would cost more than reading it (about 60-130 ms).
      if (PLAIN_TYPES.has(type.type) && bytes.byteLength <= INLINE_PLAIN_BYTES) return inAiSpan('ai.extract.inline', (span) => described(span, bytes, type, () => readDocument(bytes, type, limits)));
      return documents.run(
        call.organization ?? NO_ORGANIZATION,
        (signal) => inAiSpan('ai.extract.thread', (span) => described(span, bytes, type, () => readInThread(bytes, type, signal, span))),
        call.signal,
      );
    },
    stats() {
      return { documents: { ...documents.stats(), threads: running.size }, images: images.stats() };
    },
    ocr: { description: ocr.description, problem: ocr.problem },
    async close() {
      closed = true;
      documents.cancelWaiting(shuttingDown());
      images.cancelWaiting(shuttingDown());
      const threads = [...running];
      if (threads.length) logger.warn({ threads: threads.length }, 'extraction threads stopped by close');
      await Promise.all([...threads.map((worker) => worker.terminate()), ocr.close()]);
    },
  };
}

/**
 * Runs a read of `bytes` with its type and size on `span`, and the pages, characters and language
 * it found (never the text).
 */
async function described(span: Span, bytes: Uint8Array, type: DocumentType, read: () => Promise<ExtractResult>): Promise<ExtractResult> {
  setAttributes(span, () => ({ 'ai.document.type': type.type, 'ai.document.bytes': bytes.byteLength }));
  const result = await read();
  setAttributes(span, () => ({
    'ai.document.characters': result.text.length,
    ...(result.pages === null ? {} : { 'ai.document.pages': result.pages }),
    ...(result.language ? { 'ai.document.language': result.language } : {}),
  }));
  return result;
}

/** An error of the thread, rebuilt from its stack for the log. */
function threadError(stack: string): Error {
  return Object.assign(new Error(stack.split('\n', 1)[0]), { stack });
}

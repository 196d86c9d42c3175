/**
 * OCR of PNG and JPEG images with tesseract.js. The English LSTM data ships in the npm package
 * @tesseract.js-data/eng (its `4.0.0_best_int` folder, gzip, 2.9 MB), so nothing is downloaded and,
 * with cacheMethod 'none', nothing is written at run time.
 *
 * One worker thread is created on first use (about 0.3 s, then roughly 100-200 MB of memory while
 * it lives) and reused; tesseract.js runs one job at a time per worker, so calls are queued here.
 * A recognition that runs over its time is not waited for: the thread is terminated (tesseract's
 * WebAssembly cannot be interrupted any other way) and the next image starts a fresh one.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Worker } from 'tesseract.js';
import type { Logger } from '../logger.ts';
import { OCR_MEMORY_REFUSAL, ocrThreadUrl } from './ocr-memory.ts';
import { inAiSpan } from './spans.ts';
import { setAttributes, type Span } from '../telemetry/tracing.ts';

/** The engine cannot run (data missing, worker failed to start): a service problem, not the image's. */
export class OcrUnavailableError extends Error {
  override name = 'OcrUnavailableError';
}

/** The recognition needed more memory than the engine's cap; the image's fault, not the engine's. */
export class OcrMemoryError extends Error {
  override name = 'OcrMemoryError';
}

/** The recognition ran over the time it was given; the image's fault, not the engine's. */
export class OcrTimeoutError extends Error {
  override name = 'OcrTimeoutError';
}

export interface OcrEngine {
  /** E.g. "tesseract.js 7.0.0 (eng)"; null when the engine or its data is missing. */
  readonly description: string | null;
  /** Why the engine cannot run, for the health report; null when it can. */
  readonly problem: string | null;
  /**
   * The image's text. Rejects with OcrUnavailableError, with OcrTimeoutError after `timeoutMs` of
   * recognition (the time queued behind other images and starting the worker not counted), or
   * with OcrMemoryError when it needs more than the engine's memory cap, with the signal's reason
   * once `signal` is aborted (a recognition under way is stopped with its thread), or with another
   * Error when the image cannot be read.
   */
  recognize(image: Uint8Array, timeoutMs: number, signal?: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

/** tesseract.js creating a worker never settles when its language data fails to load. */
const START_TIMEOUT_MS = 30_000;

export interface OcrEngineOptions {
  /**
   * The most WebAssembly memory the OCR thread may hold, in MiB (EXTRACT_MEMORY_MB's default): the
   * engine and English data need under 24 MiB before an image (measured), and a 36-megapixel page
   * about 140 MiB more (measured: refused under a 100 MiB cap, read under 512).
   */
  memoryMb?: number;
}

export function createOcrEngine(logger: Logger, options: OcrEngineOptions = {}): OcrEngine {
  const memoryMb = options.memoryMb ?? 512;
  const setup = locate();
  let worker: Promise<Worker> | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;

  const start = async (langPath: string): Promise<Worker> => {
    const { createWorker, OEM } = await import('tesseract.js');
    let timer: NodeJS.Timeout | undefined;
    let failed: (reason: unknown) => void = () => {};
    const gaveUp = new Promise<never>((_, reject) => {
      failed = reject;
      timer = setTimeout(() => reject(new Error(`the OCR worker did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    });
    const created = createWorker('eng', OEM.LSTM_ONLY, {
      langPath,
      // Our entry: tesseract.js's worker script behind a memory cap and an error guard (ocr-thread.ts).
      workerPath: ocrThreadUrl(memoryMb * 1024 * 1024) as unknown as string,
      gzip: true,
      cacheMethod: 'none',
      // Without an error handler, tesseract.js throws a job's failure from its message listener,
      // an uncaught exception; with one, the failure only rejects that job's promise. During start
      // it is the only sign of a failure, so it settles the start.
      errorHandler: (error: unknown) => failed(error),
    });
    try {
      return await Promise.race([created, gaveUp]);
    } catch (error) {
      void created.then(
        (late) => late.terminate(),
        () => {},
      );
      throw error;
    } finally {
      clearTimeout(timer);
      failed = () => {};
    }
  };

  const run = async (image: Uint8Array, timeoutMs: number, signal: AbortSignal | undefined, span: Span): Promise<string> => {
    signal?.throwIfAborted();
    if (closed) throw new OcrUnavailableError('the OCR engine is closed');
    if (!setup.langPath) throw new OcrUnavailableError(setup.problem ?? 'OCR is unavailable');
    // Starting the worker costs about 0.3 s of this run.
    setAttributes(span, () => ({ 'ai.ocr.worker_started': worker === null }));
    worker ??= start(setup.langPath).catch((error: unknown) => {
      worker = null;
      logger.error({ err: error }, 'OCR worker failed to start');
      throw new OcrUnavailableError('the OCR worker failed to start', { cause: error });
    });
    const current = await worker;
    signal?.throwIfAborted();
    const job = current.recognize(Buffer.from(image.buffer, image.byteOffset, image.byteLength));
    let timer: NodeJS.Timeout | undefined;
    let onAbort = () => {};
    const stopped = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new OcrTimeoutError(`recognition ran over ${timeoutMs} ms`)), timeoutMs);
      onAbort = () => reject(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return (await Promise.race([job, stopped])).data.text;
    } catch (raw) {
      // The thread replaces its job's answer by this refusal once memory past the cap was asked for.
      const error =
        typeof raw === 'string' && raw.startsWith(OCR_MEMORY_REFUSAL) ? new OcrMemoryError(`recognition needed more than ${memoryMb} MiB`, { cause: new Error(raw.slice(OCR_MEMORY_REFUSAL.length)) }) : raw;
      // A terminated worker's job never settles; an unreadable image's rejection is handled here.
      job.catch(() => {});
      // The worker survives an unreadable image, but a fresh one costs a fraction of a second and
      // rules out a worker left broken by whatever went wrong; one that runs over must be stopped.
      worker = null;
      await current.terminate().catch(() => {});
      // tesseract.js rejects with strings.
      throw error instanceof Error ? error : new Error(String(error));
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  };

  return {
    description: setup.description,
    problem: setup.problem,
    recognize(image, timeoutMs, signal) {
      // One span per run, from its turn in the engine's queue on (spans.ts): no text, only counts.
      const result = queue.then(() =>
        inAiSpan('ai.ocr', async (span) => {
          setAttributes(span, () => ({ 'ai.ocr.images': 1, 'ai.document.pages': 1, 'ai.document.bytes': image.byteLength }));
          const text = await run(image, timeoutMs, signal, span);
          setAttributes(span, () => ({ 'ai.document.characters': text.length }));
          return text;
        }),
      );
      queue = result.catch(() => {});
      return result;
    },
    async close() {
      closed = true;
      await queue;
      const current = await worker?.catch(() => null);
      worker = null;
      await current?.terminate();
    },
  };
}

/** Finds tesseract.js and the English data without loading either, for the health report. */
function locate(): { description: string | null; problem: string | null; langPath: string | null } {
  const require = createRequire(import.meta.url);
  let version: string;
  try {
    version = (require('tesseract.js/package.json') as { version: string }).version;
  } catch {
    return { description: null, problem: 'OCR is unavailable: the tesseract.js package is not installed.', langPath: null };
  }
  try {
    const langPath = join(dirname(require.resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int');
    if (!existsSync(join(langPath, 'eng.traineddata.gz'))) throw new Error('missing');
    return { description: `tesseract.js ${version} (eng)`, problem: null, langPath };
  } catch {
    return { description: null, problem: 'OCR is unavailable: the English OCR data (@tesseract.js-data/eng) was not found.', langPath: null };
  }
}

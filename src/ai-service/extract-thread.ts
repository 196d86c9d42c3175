/**
 * The entry of the worker thread extractor.ts starts for each document: it reads the one document
 * in workerData and posts one answer. The thread is never reused, so nothing a hostile document
 * leaves behind (a poisoned cache, a fragmented heap) reaches the next one, and it is terminated
 * from outside when it runs over its time or memory.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThreadPriority } from './thread-priority.ts';
import type { ExtractionLimits } from '../config.ts';
import { readDocument, type DocumentType } from './extraction.ts';
import { HttpError } from './http-exchange.ts';
import type { ExtractResult } from './protocol.ts';

export interface ThreadInput extends DocumentType {
  /** Moved to the thread (transferList): the service keeps no copy. */
  bytes: Uint8Array;
  limits: ExtractionLimits;
  /** AI_THREAD_NICE: a hostile document's parse gives way to the API (thread-priority.ts). */
  nice: number;
}

export type ThreadMessage =
  /** The thread runs: a failure from here on is the document's, not the service's. */
  | { kind: 'reading' }
  | { kind: 'done'; result: ExtractResult }
  /** An HttpError: its status and message for the caller, its cause for the log. */
  | { kind: 'refused'; status: number; message: string; detail: string | null }
  /** Anything else: a bug or a missing package, answered 500. */
  | { kind: 'failed'; detail: string };

const port = parentPort;
if (!port) throw new Error('extract-thread.ts runs as a worker thread of extractor.ts');
const { bytes, type, charset, limits, nice } = workerData as ThreadInput;
lowerThreadPriority(nice);
const post = (message: ThreadMessage) => port.postMessage(message);

post({ kind: 'reading' });
try {
  post({ kind: 'done', result: await readDocument(bytes, { type, charset }, limits) });
} catch (error) {
  if (error instanceof HttpError) post({ kind: 'refused', status: error.status, message: error.message, detail: error.cause === undefined ? null : describe(error.cause) });
  else post({ kind: 'failed', detail: describe(error) });
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
}

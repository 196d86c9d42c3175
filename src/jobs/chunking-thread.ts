/**
 * The entry of the worker thread chunker.ts starts for each text: it chunks the one text in
 * workerData and posts the chunks. A fresh thread per text, so the thread can be terminated
 * from outside (time limit) and its heap capped without touching anything else.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { chunkText, type ChunkOptions } from './chunking.ts';

export interface ChunkingInput {
  text: string;
  options: ChunkOptions;
}

export type ChunkingMessage = { kind: 'done'; chunks: string[] } | { kind: 'failed'; detail: string };

const port = parentPort;
if (!port) throw new Error('chunking-thread.ts runs as a worker thread of chunker.ts');
const { text, options } = workerData as ChunkingInput;
try {
  port.postMessage({ kind: 'done', chunks: chunkText(text, options) } satisfies ChunkingMessage);
} catch (error) {
  port.postMessage({ kind: 'failed', detail: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies ChunkingMessage);
}

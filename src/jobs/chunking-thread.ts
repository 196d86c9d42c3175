/**
 * The entry of the worker thread chunker.ts keeps: it chunks each text it is sent and posts the
 * chunks (with their ranges in the text) back, one text at a time. chunker.ts terminates it from outside (time limit) and caps its
 * heap, without touching anything else.
 */
import { parentPort } from 'node:worker_threads';
import { chunkSpans, type ChunkOptions, type ChunkSpan } from './chunking.ts';

export interface ChunkingRequest {
  id: number;
  text: string;
  options: ChunkOptions;
}

export type ChunkingMessage = { id: number; kind: 'done'; chunks: ChunkSpan[] } | { id: number; kind: 'failed'; detail: string };

const port = parentPort;
if (!port) throw new Error('chunking-thread.ts runs as a worker thread of chunker.ts');
port.on('message', ({ id, text, options }: ChunkingRequest) => {
  try {
    port.postMessage({ id, kind: 'done', chunks: chunkSpans(text, options) } satisfies ChunkingMessage);
  } catch (error) {
    port.postMessage({ id, kind: 'failed', detail: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies ChunkingMessage);
  }
});

/**
 * The entry of the worker thread chunker.ts keeps: it chunks each text it is sent and posts the
 * chunks (with their ranges in the text, and their search text when they hold CJK words) back, one text at a time. chunker.ts terminates it from outside (time limit) and caps its
 * heap, without touching anything else.
 */
import { parentPort } from 'node:worker_threads';
import { chunkSpans, type ChunkOptions, type ChunkSpan } from './chunking.ts';
import { searchText } from '../documents/search-words.ts';

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
    // CJK words are split here too, not on the caller's loop: ICU's segmenter took ~0.75 s for a
    // million Japanese characters (against ~40 ms to chunk them); a text without CJK costs one regex test per chunk (~1 ms for 1.3 million characters).
    const chunks = chunkSpans(text, options).map((span) => {
      const search = searchText(span.text);
      return search === null ? span : { ...span, searchText: search };
    });
    port.postMessage({ id, kind: 'done', chunks } satisfies ChunkingMessage);
  } catch (error) {
    port.postMessage({ id, kind: 'failed', detail: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies ChunkingMessage);
  }
});

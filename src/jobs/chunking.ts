/**
 * Splits extracted text into overlapping chunks for indexing. A chunk is about `size` characters,
 * cut at a paragraph, sentence or word boundary where one is near, and the next chunk starts
 * `overlap` characters before the previous one ended, so a sentence cut by a boundary is still
 * whole in one of the two chunks.
 *
 * Linear in the text: every search looks only inside the chunk it is cutting (at most `size`
 * characters), and each chunk starts at least `size / 2 - overlap` characters after the last (300
 * by default), so no character is read more than a few times. An earlier version looked for the
 * next chunk's word start up to the end of the text, which on a text with no space read the rest
 * of the text once per chunk (2 million U+0120 characters took ~19 s; the same cuts now take ~10 ms). Still synchronous and CPU-bound: the job kinds run it
 * in a thread of its own (chunker.ts), never on the API's event loop.
 */
export interface ChunkOptions {
  size: number;
  overlap: number;
}

export const DEFAULT_CHUNKING: ChunkOptions = { size: 1000, overlap: 200 };

export function chunkText(text: string, options: ChunkOptions = DEFAULT_CHUNKING): string[] {
  return measuredChunks(text, options).chunks;
}

/**
 * chunkText, and how many characters its boundary searches read (`scanned`), the measure of its
 * cost the tests assert linear, since a time on a shared machine proves nothing.
 */
export function measuredChunks(text: string, options: ChunkOptions = DEFAULT_CHUNKING): { chunks: string[]; scanned: number } {
  const clean = text.replace(/\r\n?/g, '\n').replace(/[ \t]+/g, ' ').replace(/\n{3,}/g, '\n\n').trim();
  const chunks: string[] = [];
  let scanned = 0;
  let start = 0;
  while (start < clean.length) {
    let end = Math.min(start + options.size, clean.length);
    if (end < clean.length) {
      const min = start + Math.floor(options.size / 2);
      scanned += end - min;
      end = boundaryBefore(clean, min, end);
    }
    const chunk = clean.slice(start, end).trim();
    if (chunk) chunks.push(chunk);
    if (end >= clean.length) break;
    // Step back by the overlap, to a word start before `end`, but always move forward.
    let next = Math.max(end - options.overlap, start + 1);
    const space = spaceBetween(clean, next, end);
    scanned += (space === -1 ? end : space + 1) - next;
    if (space !== -1) next = space + 1;
    start = next;
  }
  return { chunks, scanned };
}

/** The first space in [from, to), or -1: never reads past `to`. */
function spaceBetween(text: string, from: number, to: number): number {
  for (let i = from; i < to; i += 1) if (text.charCodeAt(i) === 32) return i;
  return -1;
}

/** The best cut in [min, max]: after a paragraph break, else a sentence end, else a space, else max. */
function boundaryBefore(text: string, min: number, max: number): number {
  const window = text.slice(min, max);
  for (const pattern of [/\n\n/g, /[.!?]["')\]]?\s/g, /\s/g]) {
    let last = -1;
    for (const match of window.matchAll(pattern)) last = match.index + match[0].length;
    if (last > 0) return min + last;
  }
  return max;
}

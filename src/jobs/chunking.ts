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
 *
 * Each chunk also knows its range in the text it was cut from (chunkSpans), for citations: the
 * chunks are cut from a cleaned copy (line ends unified, runs of spaces and tabs made one space,
 * more than one blank line made one), so the range is mapped back to the given text. A chunk
 * starts and ends with a character the cleaning keeps as it is, so `text.slice(start, end)` is
 * the chunk exactly when the text has no such runs, and the chunk after the same cleaning when it
 * has them.
 */
export interface ChunkOptions {
  size: number;
  overlap: number;
}

export const DEFAULT_CHUNKING: ChunkOptions = { size: 1000, overlap: 200 };

/** A chunk and its range [start, end) in the text it was cut from, in UTF-16 code units (JavaScript string indexes). */
export interface ChunkSpan {
  text: string;
  start: number;
  end: number;
  /**
   * The text as full text indexes it when it has Chinese, Japanese or Korean words to split
   * (documents/search-words.ts); added by the chunking thread (chunking-thread.ts), absent otherwise.
   */
  searchText?: string;
}

export function chunkText(text: string, options: ChunkOptions = DEFAULT_CHUNKING): string[] {
  return measuredChunks(text, options).chunks;
}

/** chunkText's chunks with their ranges in `text`. */
export function chunkSpans(text: string, options: ChunkOptions = DEFAULT_CHUNKING): ChunkSpan[] {
  return measuredChunks(text, options).spans;
}

/**
 * chunkText, and how many characters its boundary searches read (`scanned`), the measure of its
 * cost the tests assert linear, since a time on a shared machine proves nothing.
 */
export function measuredChunks(text: string, options: ChunkOptions = DEFAULT_CHUNKING): { chunks: string[]; spans: ChunkSpan[]; scanned: number } {
  const clean = cleanText(text);
  const origin = originsOf(clean, text);
  const chunks: string[] = [];
  const spans: ChunkSpan[] = [];
  let scanned = 0;
  let start = 0;
  while (start < clean.length) {
    let end = Math.min(start + options.size, clean.length);
    if (end < clean.length) {
      const min = start + Math.floor(options.size / 2);
      scanned += end - min;
      end = boundaryBefore(clean, min, end);
    }
    const raw = clean.slice(start, end);
    const chunk = raw.trim();
    if (chunk) {
      chunks.push(chunk);
      // The chunk's first and last characters are not whitespace, so they stand for themselves in `text`.
      const first = start + (raw.length - raw.trimStart().length);
      const last = first + chunk.length - 1;
      spans.push({ text: chunk, start: origin[first]!, end: origin[last]! + 1 });
    }
    if (end >= clean.length) break;
    // Step back by the overlap, to a word start before `end`, but always move forward.
    let next = Math.max(end - options.overlap, start + 1);
    const space = spaceBetween(clean, next, end);
    scanned += (space === -1 ? end : space + 1) - next;
    if (space !== -1) next = space + 1;
    start = next;
  }
  return { chunks, spans, scanned };
}

/** The copy of the text the chunks are cut from. */
export function cleanText(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+/g, ' ')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/**
 * Where each character of `clean` (cleanText(text)) is in `text`, exact for every character but
 * the spaces and line ends the cleaning wrote (those get about where their run starts; no range
 * starts or ends at one). The cleaning only drops or merges spaces, tabs, CR and LF inside the
 * text and whitespace at its ends, and keeps every other character in order, so one forward walk
 * over both finds them: linear. The walk stops at the text's end, so a broken invariant gives a
 * wrong range, never an endless loop.
 */
function originsOf(clean: string, text: string): Int32Array {
  const origin = new Int32Array(clean.length);
  let j = 0;
  for (let i = 0; i < clean.length; i += 1) {
    const code = clean.charCodeAt(i);
    if (code === 32 || code === 10) {
      origin[i] = j;
      continue;
    }
    while (j < text.length && text.charCodeAt(j) !== code) j += 1;
    origin[i] = j;
    j += 1;
  }
  return origin;
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

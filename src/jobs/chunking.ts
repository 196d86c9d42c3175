/**
 * Splits extracted text into overlapping chunks for indexing. A chunk is about `size` characters,
 * cut at a paragraph, sentence or word boundary where one is near, and the next chunk starts
 * `overlap` characters before the previous one ended, so a sentence cut by a boundary is still
 * whole in one of the two chunks.
 */
export interface ChunkOptions {
  size: number;
  overlap: number;
}

export const DEFAULT_CHUNKING: ChunkOptions = { size: 1000, overlap: 200 };

export function chunkText(text: string, options: ChunkOptions = DEFAULT_CHUNKING): string[] {
  const clean = text.replace(/\r\n?/g, '\n').replace(/[ \t]+/g, ' ').replace(/\n{3,}/g, '\n\n').trim();
  const chunks: string[] = [];
  let start = 0;
  while (start < clean.length) {
    let end = Math.min(start + options.size, clean.length);
    if (end < clean.length) end = boundaryBefore(clean, start + Math.floor(options.size / 2), end);
    const chunk = clean.slice(start, end).trim();
    if (chunk) chunks.push(chunk);
    if (end >= clean.length) break;
    // Step back by the overlap, to a word start, but always move forward.
    let next = Math.max(end - options.overlap, start + 1);
    const space = clean.indexOf(' ', next);
    if (space !== -1 && space < end) next = space + 1;
    start = next;
  }
  return chunks;
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

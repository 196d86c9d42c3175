/**
 * The chunker (src/jobs/chunking.ts) is linear and cuts where it always did, and the thread that
 * runs it for the jobs (src/jobs/chunker.ts) answers the same chunks and fails a text that runs
 * over its time or memory with a readable JobFailure. The product-level shape (a 2-million-character
 * text with no space through upload, extraction and indexing while /healthz answers) is in
 * chunking-product.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createChunker } from '../../src/jobs/chunker.ts';
import { chunkSpans, chunkText, cleanText, measuredChunks, type ChunkOptions } from '../../src/jobs/chunking.ts';
import { JobFailure } from '../../src/jobs/kinds.ts';
import { searchText } from '../../src/documents/search-words.ts';

/**
 * chunkText as it was before issue 23, kept verbatim as the reference for cut points: it looked for
 * the next chunk's word start up to the end of the text (quadratic without spaces).
 */
function previousChunkText(text: string, options: ChunkOptions = { size: 1000, overlap: 200 }): string[] {
  const clean = text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+/g, ' ')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  const chunks: string[] = [];
  let start = 0;
  while (start < clean.length) {
    let end = Math.min(start + options.size, clean.length);
    if (end < clean.length) end = previousBoundaryBefore(clean, start + Math.floor(options.size / 2), end);
    const chunk = clean.slice(start, end).trim();
    if (chunk) chunks.push(chunk);
    if (end >= clean.length) break;
    let next = Math.max(end - options.overlap, start + 1);
    const space = clean.indexOf(' ', next);
    if (space !== -1 && space < end) next = space + 1;
    start = next;
  }
  return chunks;
}

function previousBoundaryBefore(text: string, min: number, max: number): number {
  const window = text.slice(min, max);
  for (const pattern of [/\n\n/g, /[.!?]["')\]]?\s/g, /\s/g]) {
    let last = -1;
    for (const match of window.matchAll(pattern)) last = match.index + match[0].length;
    if (last > 0) return min + last;
  }
  return max;
}

/** A seeded generator (LCG): the same seed gives the same text. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 4294967296;
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]! };
}

/** Words, sentence ends, quotes, tabs, CRLF, blank lines and now and then a long run with no space. */
function mixedText(seed: number, characters: number): string {
  const random = generator(seed);
  const words = ['report', 'the', 'quarterly', 'a', 'valve', 'Lisbon', 'über', '東京', 'forecast', 'x', 'approved', 'données'];
  const separators = [' ', ' ', ' ', ' ', '  ', '\t', '. ', '! ', '? ', '." ', '.) ', '\n', '\r\n', '\n\n', '\n\n\n\n', ', '];
  let text = '';
  while (text.length < characters) {
    text += random.next() < 0.01 ? 'y'.repeat(Math.floor(random.next() * 3000)) : random.pick(words);
    text += random.pick(separators);
  }
  return text;
}

const LONG = Array.from({ length: 1240 }, (_, i) => `Sentence ${i} of the long report says something about topic ${i % 37}.`).join(' ');

describe('chunkText', () => {
  it.each([
    { given: "the pricing suite's 1240 sentences", text: LONG },
    { given: 'paragraphs of short sentences', text: Array.from({ length: 300 }, (_, i) => `Paragraph ${i}. It has two sentences!\n\n`).join('') },
    { given: 'one long line of words', text: Array.from({ length: 5000 }, (_, i) => `word${i % 97}`).join(' ') },
    { given: 'words, punctuation, tabs, CRLF and blank lines (seed 1)', text: mixedText(1, 60_000) },
    { given: 'the same with runs of no space (seed 2)', text: mixedText(2, 120_000) },
    { given: 'seed 3', text: mixedText(3, 200_000) },
    { given: '20 000 characters with no space', text: 'z'.repeat(20_000) },
    { given: 'a space only near the end', text: `${'q'.repeat(9_000)} tail` },
    { given: 'shorter than one chunk', text: 'Just one sentence.' },
    { given: 'only whitespace', text: ' \t\r\n\n ' },
    { given: 'empty', text: '' },
  ])('cuts $given exactly where the previous chunker did', ({ text }) => {
    expect(chunkText(text)).toEqual(previousChunkText(text));
  });

  it('cuts with other sizes and overlaps as before', () => {
    const text = mixedText(4, 30_000);
    for (const options of [
      { size: 200, overlap: 50 },
      { size: 500, overlap: 0 },
      { size: 64, overlap: 31 },
    ]) {
      expect(chunkText(text, options)).toEqual(previousChunkText(text, options));
    }
  });

  it('reads each character of a 2-million-character text with no space less than once in its searches', () => {
    // U+0120: the character of issue 23's upload (a two-byte string whose searches were slowest).
    const text = '\u0120'.repeat(2_000_000);
    const { chunks, scanned } = measuredChunks(text);
    // Every chunk is the 1000 characters 800 after the previous one's start (the overlap is 200).
    expect(chunks).toHaveLength(2500);
    chunks.forEach((chunk, i) => expect(chunk === text.slice(800 * i, 800 * i + 1000)).toBe(true));
    // The previous chunker read the rest of the text once per chunk: ~2.5 billion characters here.
    expect(scanned).toBeLessThan(text.length);
  });

  it('reads a number of characters proportional to the text, whatever its shape', () => {
    for (const text of [mixedText(5, 400_000), 'w'.repeat(400_000), 'a b '.repeat(100_000), '\n'.repeat(400_000) + 'x']) {
      const single = measuredChunks(text).scanned;
      const double = measuredChunks(text + '\n\n' + text).scanned;
      expect(single).toBeLessThanOrEqual(text.length);
      expect(double).toBeLessThanOrEqual(2 * single + 2000);
    }
  });
});

describe('chunkSpans', () => {
  /** Words with two-byte, three-byte and astral (surrogate pair) characters, one space apart. */
  const multiByte = Array.from({ length: 3000 }, (_, i) => ['naïve', 'Größe', '東京都', '😀x', '𝔘𝔫𝔦', 'plain.'][i % 6]).join(' ');

  it.each([
    { given: 'the long report', text: LONG },
    { given: 'multi-byte and astral characters', text: multiByte },
    { given: 'astral characters with no space', text: '😀'.repeat(3000) },
    { given: 'text after leading whitespace', text: '\u00a0\u3000 ' + multiByte },
    { given: 'shorter than one chunk', text: 'Just one sentence.' },
  ])('gives ranges whose slice of $given is the chunk', ({ text }) => {
    const spans = chunkSpans(text);
    expect(spans.map((span) => span.text)).toEqual(chunkText(text));
    for (const span of spans) expect(text.slice(span.start, span.end)).toBe(span.text);
  });

  it.each([
    { given: 'tabs, CRLF, runs of spaces and blank lines (seed 7)', text: mixedText(7, 80_000) },
    { given: 'runs of no space (seed 2)', text: mixedText(2, 120_000) },
    { given: 'leading and trailing whitespace', text: '\r\n\t  ' + mixedText(8, 5_000) + ' \n\n\n' },
  ])('gives ranges whose slice of $given, cleaned as the chunker cleans, is the chunk', ({ text }) => {
    const spans = chunkSpans(text);
    expect(spans.map((span) => span.text)).toEqual(chunkText(text));
    let previous = -1;
    for (const span of spans) {
      expect(cleanText(text.slice(span.start, span.end))).toBe(span.text);
      // A range starts and ends at the chunk's first and last characters.
      expect(text.slice(span.start, span.end)).toBe(text.slice(span.start, span.end).trim());
      expect(span.start).toBeGreaterThan(previous);
      previous = span.start;
    }
  });

  it('is empty for whitespace only', () => {
    expect(chunkSpans(' \t\r\n\n ')).toEqual([]);
  });
});

describe('the chunking thread (createChunker)', () => {
  it('answers what chunkSpans answers, text after text on one kept thread', async () => {
    // With each chunk's search text when it holds CJK words (mixedText's 東京), as full text indexes it.
    const searchable = (text: string) =>
      chunkSpans(text).map((span) => {
        const search = searchText(span.text);
        return search === null ? span : { ...span, searchText: search };
      });
    const chunker = createChunker();
    try {
      const text = mixedText(6, 100_000);
      const chunks = await chunker.chunk(text);
      expect(chunks).toEqual(searchable(text));
      expect(chunks.some((chunk) => chunk.searchText?.includes(' 東京 '))).toBe(true);
      expect(await chunker.chunk('')).toEqual([]);
      expect(await Promise.all([chunker.chunk(text), chunker.chunk('a b c')])).toEqual([searchable(text), chunkSpans('a b c')]);
    } finally {
      await chunker.close();
    }
  });

  it('fails the text with a JobFailure when the thread runs over its time limit, and chunks the next on a fresh thread', async () => {
    const chunker = createChunker({ timeoutMs: 1, memoryMb: 256 });
    try {
      // No thread starts, let alone chunks 2 million characters, within a millisecond.
      const refused = chunker.chunk('\u0120'.repeat(2_000_000));
      const after = chunker.chunk('too late as well');
      await expect(refused).rejects.toBeInstanceOf(JobFailure);
      await expect(refused).rejects.toThrow(/^The document's text could not be split into chunks within 0\.001 s\.$/);
      await expect(after).rejects.toBeInstanceOf(JobFailure);
    } finally {
      await chunker.close();
    }
  });

  it('fails the text with a JobFailure when the thread runs out of memory, and chunks the next on a fresh thread', async () => {
    // 16 MiB of heap cannot hold 8 million two-byte characters (16 MB), let alone their chunks.
    // (A heap far smaller than V8 needs to start a thread aborts the process instead: keep caps sane.)
    const chunker = createChunker({ timeoutMs: 30_000, memoryMb: 16 });
    try {
      const refused = chunker.chunk('\u0120'.repeat(8_000_000));
      await expect(refused).rejects.toBeInstanceOf(JobFailure);
      await expect(refused).rejects.toThrow(/^Splitting the document's text into chunks needed more than 16 MiB of memory\.$/);
      expect(await chunker.chunk('one two three')).toEqual(chunkSpans('one two three'));
    } finally {
      await chunker.close();
    }
  });

  it('refuses texts once closed', async () => {
    const chunker = createChunker();
    await chunker.close();
    await expect(chunker.chunk('late')).rejects.toThrow('the chunker is closed');
  });
});

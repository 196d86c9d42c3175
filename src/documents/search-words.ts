/**
 * The words full-text search sees in a text written without spaces between its words (issue 24,
 * item 4). PostgreSQL's parser splits words at spaces and punctuation only, so a Chinese or
 * Japanese sentence would be one "word" and no query word would ever match inside it. Runs of
 * Han, Hiragana, Katakana and Hangul are split into words by ICU's dictionary segmenter
 * (Intl.Segmenter, the same in the chunking thread, in the API and in every Node of one version),
 * and everything else is left as it is, so PostgreSQL then sees space-separated words. Indexing
 * (chunking-thread.ts -> document_chunks.search_text), queries (chunk-search.ts) and highlights
 * (highlights.ts) all split with this module, so they agree word for word.
 *
 * The segmenter is made without a locale: its CJK dictionary does not depend on it, and the query
 * side does not know the query's language.
 */

/** A run of CJK script. Script_Extensions, so that marks shared by the scripts (ー, 々, 、) stay inside the run. */
const CJK_RUN = /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}]+/gu;
const HAS_CJK = /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}]/u;

/** Made at first use: ICU's word-break data takes ~13 ms to load, on the API's start otherwise. */
let segmenter: Intl.Segmenter | undefined;

/** A word of a text and its range [start, end) in UTF-16 code units. */
export interface SegmentedWord {
  start: number;
  end: number;
  word: string;
}

/** Whether the text holds a character of a CJK script. */
export function hasCjk(text: string): boolean {
  return HAS_CJK.test(text);
}

/** The words of a CJK run (only word-like segments: punctuation is dropped), with ranges offset by `offset`. */
export function cjkWords(run: string, offset = 0): SegmentedWord[] {
  const words: SegmentedWord[] = [];
  segmenter ??= new Intl.Segmenter(undefined, { granularity: 'word' });
  for (const segment of segmenter.segment(run)) {
    if (segment.isWordLike) words.push({ start: offset + segment.index, end: offset + segment.index + segment.segment.length, word: segment.segment });
  }
  return words;
}

/**
 * The text as full-text search indexes and queries it: each CJK run replaced by its words joined
 * by spaces (with a space either side, so a word never sticks to a neighbouring Latin word); null
 * when the text has no CJK run, so that the stored search text stays null for most chunks and the
 * text itself is indexed.
 */
export function searchText(text: string): string | null {
  if (!hasCjk(text)) return null;
  return text.replace(
    CJK_RUN,
    (run) =>
      ` ${cjkWords(run)
        .map((word) => word.word)
        .join(' ')} `,
  );
}

/**
 * A plain Okapi BM25, the reference lexical scorer of the retrieval benchmark.
 *
 * Set up as the BEIR baselines are (Anserini/Lucene, "flat" index): k1 0.9, b 0.4, one field
 * made of title + text, Lucene's classic English stop words, and here no stemming (so it sits a
 * little below Anserini's stemmed figures). Tokens are runs of Unicode letters and digits,
 * lower-cased, which is close to Lucene's StandardTokenizer for this kind of text. Document
 * lengths are exact token counts (Lucene stores them lossily), so scores can differ from
 * Lucene's in the last digits, not in kind.
 */

/** Lucene's classic English stop set (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET), 33 words. */
export const STOP_WORDS: ReadonlySet<string> = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'but',
  'by',
  'for',
  'if',
  'in',
  'into',
  'is',
  'it',
  'no',
  'not',
  'of',
  'on',
  'or',
  'such',
  'that',
  'the',
  'their',
  'then',
  'there',
  'these',
  'they',
  'this',
  'to',
  'was',
  'will',
  'with',
]);

export const K1 = 0.9;
export const B = 0.4;

/** Lower-cased runs of Unicode letters/digits, stop words removed. */
export function tokenize(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((token) => !STOP_WORDS.has(token));
}

/** Lucene's BM25 IDF, always positive: ln(1 + (N - df + 0.5) / (df + 0.5)). */
export function idf(documentCount: number, documentFrequency: number): number {
  return Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5));
}

export type Bm25Document = { id: string; title: string; text: string };
export type Hit = { id: string; score: number };
export type Bm25 = {
  /**
   * The k best documents for `query`; with `only`, only those of its ids (a filtered search: the
   * statistics stay the whole collection's, as a Lucene filter leaves them and as documents.search
   * keeps its workspace's BM25 statistics under a filter).
   */
  search(query: string, k: number, only?: ReadonlySet<string>): Hit[];
};

/**
 * Indexes `documents` (title + text as one field) and returns a searcher. `search` scores
 * every document sharing a term with the query: for each distinct query term t, weighted by
 * its count in the query (as Anserini's bag-of-words query does),
 *   idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·dl/avgdl)).
 * (Lucene drops the constant k1 + 1; the ranking is the same.) Results are the k best, score
 * descending, ties by document id ascending so that runs are deterministic.
 */
export function createBm25(documents: readonly Bm25Document[]): Bm25 {
  const postings = new Map<string, { docs: number[]; tfs: number[] }>();
  const lengths = new Float64Array(documents.length);
  documents.forEach((document, index) => {
    const tokens = tokenize(`${document.title} ${document.text}`);
    lengths[index] = tokens.length;
    const counts = new Map<string, number>();
    for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
    for (const [term, tf] of counts) {
      let list = postings.get(term);
      if (list === undefined) postings.set(term, (list = { docs: [], tfs: [] }));
      list.docs.push(index);
      list.tfs.push(tf);
    }
  });
  const count = documents.length;
  const averageLength = count === 0 ? 0 : lengths.reduce((sum, length) => sum + length, 0) / count;

  return {
    search(query: string, k: number, only?: ReadonlySet<string>): Hit[] {
      const weights = new Map<string, number>();
      for (const token of tokenize(query)) weights.set(token, (weights.get(token) ?? 0) + 1);
      const scores = new Float64Array(count);
      const touched = new Set<number>();
      for (const [term, weight] of weights) {
        const list = postings.get(term);
        if (list === undefined) continue;
        const termIdf = idf(count, list.docs.length) * weight;
        list.docs.forEach((doc, i) => {
          const tf = list.tfs[i] ?? 0;
          const norm = K1 * (1 - B + (B * (lengths[doc] ?? 0)) / averageLength);
          scores[doc] = (scores[doc] ?? 0) + (termIdf * tf * (K1 + 1)) / (tf + norm);
          touched.add(doc);
        });
      }
      const hits = [...touched].map((doc) => ({ id: documents[doc]?.id ?? '', score: scores[doc] ?? 0 })).filter((hit) => only === undefined || only.has(hit.id));
      hits.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      return hits.slice(0, Math.max(0, k));
    },
  };
}

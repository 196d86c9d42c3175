/**
 * Ways of fusing the vector and the full-text ranking of one query (capture.ts), compared offline
 * by fusion.ts. Each fusion gives the query's documents in order, as the benchmark reads
 * documents.search: the fused chunks, ties to the smaller chunk id, the first SEARCH_LIMIT of them,
 * each document at its first chunk. The families, as surveyed by Bruch, Gai and Ingber ("An
 * Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023):
 *   - rrf: reciprocal-rank fusion, w / (k + vector rank) + (1 - w) / (k + text rank); w 0.5 is
 *     plain RRF (Cormack et al. 2009), the service's ranking with k 60;
 *   - convex: alpha · vector score + (1 - alpha) · text score, each normalised per query: min-max
 *     over the ranking, z-score, or "theoretical" min-max (the bound the score cannot pass below as
 *     the minimum: -1 for cosine, 0 for BM25, the ranking's best as the maximum). A chunk one
 *     ranking did not return gets that ranking's lowest normalised score.
 * With `documents`, each ranking is first pooled to documents (a document's best chunk: its
 * highest score and its best rank), then fused; ties to the smaller document id.
 */
import type { CapturedHit, CapturedQuery } from './capture.ts';

/** documents.search's limit in the benchmark (run.ts): chunks beyond it are never seen. */
export const SEARCH_LIMIT = 50;

export type Normalisation = 'minmax' | 'zscore' | 'theoretical';
export type Fusion = { kind: 'rrf'; k: number; w: number; documents?: boolean } | { kind: 'convex'; norm: Normalisation; alpha: number; documents?: boolean };

export function label(fusion: Fusion): string {
  const level = fusion.documents ? ', documents' : '';
  return fusion.kind === 'rrf' ? `rrf k=${fusion.k} w=${fusion.w}${level}` : `convex ${fusion.norm} alpha=${fusion.alpha}${level}`;
}

interface Item {
  id: string;
  document: string;
  rank: number;
  score: number;
}

/** A ranking as items, or pooled to documents: one item per document, at its best chunk. */
function items(hits: readonly CapturedHit[], documents: boolean): Item[] {
  const all = hits.map(([id, document, score], rank) => ({ id, document, rank: rank + 1, score }));
  if (!documents) return all;
  const seen = new Set<string>();
  return all.filter((item) => !seen.has(item.document) && seen.add(item.document)).map((item, rank) => ({ ...item, id: item.document, rank: rank + 1 }));
}

/** Each item's normalised score and the score of an item the ranking did not return. */
function normalise(list: readonly Item[], norm: Normalisation, floor: number): { of: Map<string, number>; missing: number } {
  if (list.length === 0) return { of: new Map(), missing: 0 };
  const scores = list.map((item) => item.score);
  const max = Math.max(...scores);
  const min = norm === 'theoretical' ? floor : Math.min(...scores);
  const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
  const sd = Math.sqrt(scores.reduce((a, b) => a + (b - mean) ** 2, 0) / scores.length);
  const f = norm === 'zscore' ? (s: number) => (sd > 0 ? (s - mean) / sd : 0) : (s: number) => (max > min ? (s - min) / (max - min) : 1);
  const of = new Map(list.map((item) => [item.id, f(item.score)]));
  return { of, missing: norm === 'zscore' ? Math.min(...of.values()) : 0 };
}

/** The query's document ids in the fused order. */
export function fuse(query: CapturedQuery, fusion: Fusion): string[] {
  const documents = fusion.documents ?? false;
  const vector = items(query.vector, documents);
  const text = items(query.text, documents);
  const documentOf = new Map([...vector, ...text].map((item) => [item.id, item.document]));
  const scores = new Map<string, number>();
  if (fusion.kind === 'rrf') {
    for (const [list, weight] of [
      [vector, fusion.w],
      [text, 1 - fusion.w],
    ] as const) {
      // Weight 0: that ranking is not read at all (w 1 is the vector ranking alone, w 0 full text alone).
      if (weight > 0) for (const item of list) scores.set(item.id, (scores.get(item.id) ?? 0) + weight / (fusion.k + item.rank));
    }
  } else {
    const v = normalise(vector, fusion.norm, -1);
    const t = normalise(text, fusion.norm, 0);
    for (const id of documentOf.keys()) scores.set(id, fusion.alpha * (v.of.get(id) ?? v.missing) + (1 - fusion.alpha) * (t.of.get(id) ?? t.missing));
  }
  const order = [...scores].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).slice(0, SEARCH_LIMIT);
  return [...new Set(order.map(([id]) => documentOf.get(id)!))];
}

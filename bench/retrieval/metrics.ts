/**
 * Ranking metrics as BEIR reports them (through pytrec_eval, i.e. trec_eval): nDCG@k with
 * graded gains and Recall@k. `judged` maps document id → grade for one query; an unjudged
 * document counts as grade 0.
 */

/** Grades above 0 count; 0, negative or unjudged give nothing (trec_eval's convention). */
function gain(judged: ReadonlyMap<string, number>, id: string): number {
  return Math.max(0, judged.get(id) ?? 0);
}

/** The first k ids of `ranking`, each id once (a repeated id is ignored, as trec_eval expects a set). */
function topK(k: number, ranking: readonly string[]): string[] {
  return [...new Set(ranking)].slice(0, Math.max(0, k));
}

/**
 * nDCG@k: DCG = Σ over ranks r = 1..k of grade / log2(r + 1) (linear gain, as trec_eval's
 * ndcg_cut), divided by the DCG of the ideal ordering of all judged grades. 0 when the query
 * has no document of grade above 0.
 */
export function ndcgAt(k: number, ranking: readonly string[], judged: ReadonlyMap<string, number>): number {
  const dcg = topK(k, ranking).reduce((sum, id, rank) => sum + gain(judged, id) / Math.log2(rank + 2), 0);
  const ideal = [...judged.values()]
    .filter((grade) => grade > 0)
    .sort((a, b) => b - a)
    .slice(0, Math.max(0, k))
    .reduce((sum, grade, rank) => sum + grade / Math.log2(rank + 2), 0);
  return ideal === 0 ? 0 : dcg / ideal;
}

/** Recall@k: the share of the query's relevant documents (grade above 0) found in the top k; 0 when it has none. */
export function recallAt(k: number, ranking: readonly string[], judged: ReadonlyMap<string, number>): number {
  const relevant = [...judged.values()].filter((grade) => grade > 0).length;
  if (relevant === 0) return 0;
  return topK(k, ranking).filter((id) => gain(judged, id) > 0).length / relevant;
}

/** The arithmetic mean of `fn` over `queries` (BEIR averages per query); throws on an empty list rather than return NaN. */
export function meanOver<T>(queries: readonly T[], fn: (query: T) => number): number {
  if (queries.length === 0) throw new RangeError('meanOver: no queries');
  return queries.reduce((sum, query) => sum + fn(query), 0) / queries.length;
}

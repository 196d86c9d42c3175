/** What the retrieval benchmark (run.ts) measures and hands to its report (report.ts) and to bench/index.ts. */
import type { FilterPath } from './filtered.ts';

export interface SystemScore {
  system: string;
  ndcg: number;
  recall: number;
  /** Per query, in the collection's order (for comparisons). */
  perQuery: number[];
}

/** One filtered path (filtered.ts): every system on the queries with a relevant document inside their filter. */
export interface FilteredScore {
  name: FilterPath['name'];
  label: string;
  /** The mean share of the documents its filters keep. */
  share: number;
  queries: number;
  skipped: number;
  /** Hits of documents outside the filter, over all searches: 0 unless the filter leaks. */
  outside: number;
  /**
   * Hybrid's nDCG@10 / BM25's without filters on this path's queries (all their judgments): the
   * unfiltered ratio on the same query set, since the path's queries are a subset.
   */
  sameQueriesRatio: number;
  systems: SystemScore[];
}

export interface RetrievalResult {
  collection: string;
  documents: number;
  queries: number;
  chunks: number;
  failedJobs: number;
  uploadSeconds: number;
  /** From the first jobs.create to the last job settled. */
  indexSeconds: number;
  searchSeconds: Record<string, number>;
  systems: SystemScore[];
  filtered: FilteredScore[];
}

export type RetrievalOutcome = RetrievalResult | { skipped: string };

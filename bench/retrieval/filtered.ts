/**
 * The filtered paths of the retrieval benchmark (docs/benchmarks.md, "Retrieval quality"): the
 * collection is uploaded in SLICES slices, one after the other, so documents' `createdAt` (set
 * when their upload is created) orders them by slice, and a `createdAfter`/`createdBefore` filter
 * keeps whole slices. Two filters, one per search path of chunk-search.ts:
 *   - `half`: createdAfter the middle boundary, about half the documents (pgvector's iterative
 *     HNSW scan, which must walk past the other half);
 *   - `slice`: one slice, 1/SLICES of the documents, below the 5% under which the ranking is an
 *     exact scan; query i gets slice i mod SLICES, so every slice is used.
 * Each query is judged on the documents inside its filter only; a query with no relevant document
 * inside is skipped (and counted). The baseline is BM25 (bm25.ts) restricted to the same documents.
 * Which documents a filter keeps is computed from the `created_at` the database holds, with the
 * filter's own comparisons (>= after, < before), not from the order of upload.
 */
import type { Client } from '../document-app.ts';
import type { Collection } from './dataset.ts';

/**
 * 25 slices of 4% each: a slice stays under chunk-search.ts's 5% (EXACT_SHARE) even when the
 * division is uneven, from about 100 documents up (a RETRIEVAL_SAMPLE of 30 has slices of 2, 6.7%).
 */
export const SLICES = 25;
/** The aim of each filtered path: its hybrid/BM25 ratio at least this share of the unfiltered one. */
export const FILTERED_AIM = 0.95;

export type SearchFilters = NonNullable<Parameters<Client['documents']['search']>[0]['filters']>;

export interface FilteredQuery {
  /** The query's index in the collection's list. */
  index: number;
  text: string;
  filters: SearchFilters;
  /** The collection's document ids the filter keeps. */
  inside: ReadonlySet<string>;
  /** The query's judgments on those documents. */
  judged: ReadonlyMap<string, number>;
}

export interface FilterPath {
  name: 'half' | 'slice';
  label: string;
  /** The mean share of the collection's documents the path's filters keep. */
  share: number;
  queries: FilteredQuery[];
  /** Queries without a relevant document inside their filter: not searched, not scored. */
  skipped: number;
}

/** Slice s of `count` items in order: [start, end). */
export function sliceBounds(count: number, s: number): [number, number] {
  return [Math.round((s * count) / SLICES), Math.round(((s + 1) * count) / SLICES)];
}

/**
 * The two paths, given each document's creation time (collection id → ms since the epoch) and the
 * SLICES + 1 instants taken between the slices' uploads (the first before any, the last after all).
 */
export function filterPaths(collection: Collection, createdAt: ReadonlyMap<string, number>, boundaries: readonly Date[]): FilterPath[] {
  if (boundaries.length !== SLICES + 1) throw new RangeError(`expected ${SLICES + 1} boundaries, got ${boundaries.length}`);
  const keeping = (after?: Date, before?: Date) =>
    new Set(
      collection.documents
        .map((document) => document.id)
        .filter((id) => {
          const at = createdAt.get(id);
          return at !== undefined && (after === undefined || at >= after.getTime()) && (before === undefined || at < before.getTime());
        }),
    );
  const middle = boundaries[Math.floor(SLICES / 2)]!;
  const half = keeping(middle);
  const slices = Array.from({ length: SLICES }, (_, s) => keeping(boundaries[s], boundaries[s + 1]));
  return [
    path(collection, 'half', `createdAfter the middle boundary (~${Math.round((100 * half.size) / collection.documents.length)}% of the documents: iterative HNSW scan)`, () => ({
      filters: { createdAfter: middle },
      inside: half,
    })),
    path(collection, 'slice', `one slice in ${SLICES} per query (~${(100 / SLICES).toFixed(0)}% of the documents: exact scan)`, (i) => {
      const s = i % SLICES;
      return { filters: { createdAfter: boundaries[s]!, createdBefore: boundaries[s + 1]! }, inside: slices[s]! };
    }),
  ];
}

function path(collection: Collection, name: FilterPath['name'], label: string, filterOf: (i: number) => { filters: SearchFilters; inside: ReadonlySet<string> }): FilterPath {
  const queries: FilteredQuery[] = [];
  let skipped = 0;
  let kept = 0;
  collection.queries.forEach((query, index) => {
    const { filters, inside } = filterOf(index);
    kept += inside.size;
    const judged = new Map([...(collection.qrels.get(query.id) ?? [])].filter(([id]) => inside.has(id)));
    if ([...judged.values()].some((grade) => grade > 0)) queries.push({ index, text: query.text, filters, inside, judged });
    else skipped++;
  });
  const share = collection.queries.length === 0 ? 0 : kept / collection.queries.length / collection.documents.length;
  return { name, label, share, queries, skipped };
}

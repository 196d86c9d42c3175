/**
 * The retrieval benchmark's filtered paths and sample (bench/retrieval/filtered.ts, dataset.ts)
 * and BM25 restricted to some documents (bm25.ts): which documents each filter keeps, which
 * queries are judged and on what, and that a restriction leaves the statistics alone.
 */
import { describe, expect, it } from 'vitest';
import { createBm25 } from '../../bench/retrieval/bm25.ts';
import { sampleCollection, type Collection } from '../../bench/retrieval/dataset.ts';
import { filterPaths, SLICES, sliceBounds } from '../../bench/retrieval/filtered.ts';
import { retrievalRows } from '../../bench/retrieval/report.ts';
import type { RetrievalResult } from '../../bench/retrieval/result.ts';

/** 100 documents d0..d99, d<i> created at ms 10·i + 5; boundaries at 10·(4s) (slice s holds d4s..d4s+3). */
const documents = Array.from({ length: 100 }, (_, i) => ({ id: `d${i}`, title: '', text: `word${i}` }));
const createdAt = new Map(documents.map((document, i) => [document.id, 10 * i + 5]));
const boundaries = Array.from({ length: SLICES + 1 }, (_, s) => new Date(10 * sliceBounds(100, s)[0] + (s === SLICES ? 1000 : 0)));
const collection: Collection = {
  name: 'tiny',
  documents,
  queries: [
    { id: 'q0', text: 'first' },
    { id: 'q1', text: 'second' },
    { id: 'q2', text: 'third' },
  ],
  qrels: new Map([
    [
      'q0',
      new Map([
        ['d1', 2],
        ['d60', 1],
      ]),
    ], // slice 0 and the upper half
    [
      'q1',
      new Map([
        ['d2', 1],
        ['d5', 0],
      ]),
    ], // only in the lower half; its slice (1) has d5, graded 0
    [
      'q2',
      new Map([
        ['d9', 1],
        ['d10', 1],
      ]),
    ], // slice 2 holds d8..d11
  ]),
};

describe('sliceBounds', () => {
  it('cuts in SLICES consecutive pieces covering everything', () => {
    const bounds = Array.from({ length: SLICES }, (_, s) => sliceBounds(103, s));
    expect(bounds[0]![0]).toBe(0);
    expect(bounds.at(-1)![1]).toBe(103);
    for (let s = 1; s < SLICES; s++) expect(bounds[s]![0]).toBe(bounds[s - 1]![1]);
    // no slice above chunk-search.ts's 5%: 103 / 25 is 4.12 documents, 5% is 5.15
    for (const [start, end] of bounds) expect(end - start).toBeLessThanOrEqual(5);
  });
});

describe('filterPaths', () => {
  const [half, slice] = filterPaths(collection, createdAt, boundaries);

  it('half: createdAfter the middle boundary keeps the upper half; a query without a relevant document there is skipped', () => {
    expect(half!.queries.map((query) => query.index)).toEqual([0]);
    expect(half!.skipped).toBe(2);
    expect(half!.queries[0]!.filters).toEqual({ createdAfter: boundaries[12] });
    expect([...half!.queries[0]!.inside].sort()).toEqual(
      documents
        .slice(48)
        .map((document) => document.id)
        .sort(),
    );
    expect([...half!.queries[0]!.judged]).toEqual([['d60', 1]]);
    expect(half!.share).toBeCloseTo(0.52, 10);
  });

  it('slice: query i gets slice i mod SLICES, judged on it alone; grade 0 is not relevant', () => {
    expect(slice!.queries.map((query) => query.index)).toEqual([0, 2]);
    expect(slice!.skipped).toBe(1);
    expect(slice!.queries[1]!.filters).toEqual({ createdAfter: boundaries[2], createdBefore: boundaries[3] });
    expect([...slice!.queries[1]!.inside]).toEqual(['d8', 'd9', 'd10', 'd11']);
    expect([...slice!.queries[1]!.judged]).toEqual([
      ['d9', 1],
      ['d10', 1],
    ]);
    expect(slice!.share).toBeCloseTo(0.04, 10);
  });

  it('refuses a wrong number of boundaries', () => {
    expect(() => filterPaths(collection, createdAt, boundaries.slice(1))).toThrow(RangeError);
  });
});

describe('sampleCollection', () => {
  it('keeps the first documents, their judgments, and the queries with a relevant one among them', () => {
    const sample = sampleCollection(collection, 6);
    expect(sample.documents.map((document) => document.id)).toEqual(['d0', 'd1', 'd2', 'd3', 'd4', 'd5']);
    expect(sample.queries.map((query) => query.id)).toEqual(['q0', 'q1']);
    expect([...sample.qrels.get('q0')!]).toEqual([['d1', 2]]);
    expect([...sample.qrels.get('q1')!]).toEqual([
      ['d2', 1],
      ['d5', 0],
    ]);
    expect(sample.qrels.has('q2')).toBe(false);
  });
});

describe('BM25 restricted to some documents', () => {
  it("ranks only those, with the whole collection's statistics", () => {
    const bm25 = createBm25([
      { id: 'a', title: '', text: 'apple apple pear' },
      { id: 'b', title: '', text: 'apple pear pear' },
      { id: 'c', title: '', text: 'apple' },
    ]);
    const all = bm25.search('apple pear', 10);
    expect(all.map((hit) => hit.id).sort()).toEqual(['a', 'b', 'c']);
    const only = bm25.search('apple pear', 10, new Set(['b', 'c']));
    expect(only.map((hit) => hit.id)).toEqual(['b', 'c']);
    // The same scores as unrestricted: the statistics are the whole collection's.
    expect(only).toEqual(all.filter((hit) => hit.id !== 'a'));
  });
});

describe('retrievalRows', () => {
  const system = (name: string, ndcg: number) => ({ system: name, ndcg, recall: 0.5, perQuery: [ndcg] });
  const result: RetrievalResult = {
    collection: 'tiny',
    documents: 100,
    queries: 3,
    chunks: 120,
    failedJobs: 0,
    uploadSeconds: 1,
    indexSeconds: 10,
    searchSeconds: { hybrid: 1, 'hybrid half': 0.5 },
    systems: [system('hybrid', 0.6), system('vector', 0.5), system('fulltext', 0.45), system('BM25 (bm25.ts)', 0.5)],
    filtered: [
      { name: 'half', label: 'half', share: 0.52, queries: 2, skipped: 1, outside: 0, sameQueriesRatio: 1.25, systems: [system('hybrid', 0.55), system('BM25 (bm25.ts)', 0.5)] },
      { name: 'slice', label: 'slice', share: 0.04, queries: 0, skipped: 3, outside: 0, sameQueriesRatio: Number.NaN, systems: [] },
    ],
  };

  it("puts each filtered path's hybrid/BM25 over the unfiltered one beside its aim, and says when a path had no query", () => {
    const rows = retrievalRows(result);
    expect(rows[0]).toEqual(['retrieval tiny nDCG@10, hybrid / BM25 (100 docs, 3 queries)', '1.200  (0.6000 / 0.5000)', '>= 1.15']);
    // (0.55 / 0.5) / 1.2 = 0.9167: below the aim of 0.95.
    expect(rows.find((row) => row[0]!.includes('filtered half'))).toEqual([
      '  filtered half (52.0% of docs, 2 queries, 1 skipped): (hybrid / BM25) / unfiltered',
      '0.917  (1.100 = 0.5500 / 0.5000; unfiltered on these queries 1.250; 0 hits outside)',
      '>= 0.95, 0 outside',
    ]);
    expect(rows.find((row) => row[0]!.includes('filtered slice'))![1]).toBe('no query has a relevant document inside its filter');
    expect(rows.at(-1)![1]).toContain('1 s, 10 s (12.0 chunks/s; 0 jobs failed); 2 s');
  });
});

import { describe, expect, it } from 'vitest';
import type { CapturedQuery } from '../../bench/retrieval/capture.ts';
import { fuse, type Fusion } from '../../bench/retrieval/fusions.ts';

// Two rankings of chunks c1..c5 of documents A, B, C (c1 and c2 both of A); scores as captured.
const query: CapturedQuery = {
  id: 'q',
  vector: [
    ['c3', 'B', 0.9],
    ['c1', 'A', 0.8],
    ['c5', 'C', 0.2],
  ],
  text: [
    ['c2', 'A', 12],
    ['c4', 'B', 11],
    ['c1', 'A', 2],
  ],
};

describe('fuse', () => {
  const cases: { name: string; given: Fusion; want: string[] }[] = [
    // c1: 1/62 + 1/63 leads; c3 1/61 and c2 1/61 tie, c2 first (smaller id); then c4 1/62, c5 1/63.
    { name: 'RRF k=60: a chunk both rankings found leads, ties to the smaller chunk id', given: { kind: 'rrf', k: 60, w: 0.5 }, want: ['A', 'B', 'C'] },
    { name: 'w 1 reads the vector ranking alone', given: { kind: 'rrf', k: 60, w: 1 }, want: ['B', 'A', 'C'] },
    // full text alone: c2 (A), c4 (B), c1 (A again); C is not in it at all.
    { name: 'w 0 reads the full-text ranking alone', given: { kind: 'rrf', k: 60, w: 0 }, want: ['A', 'B'] },
    // min-max: vector c3 1, c1 6/7, c5 0; text c2 1, c4 0.9, c1 0. alpha 0.5: c3 0.5, c1 0.43, c2 0.5, c4 0.45, c5 0.
    { name: 'convex min-max, alpha 0.5: ties to the smaller chunk id', given: { kind: 'convex', norm: 'minmax', alpha: 0.5 }, want: ['A', 'B', 'C'] },
    // alpha 0.9: c3 0.9 + 0, c1 0.771 + 0, c2 0 + 0.1: B, A, C.
    { name: 'convex min-max, alpha 0.9 follows the vector ranking', given: { kind: 'convex', norm: 'minmax', alpha: 0.9 }, want: ['B', 'A', 'C'] },
    // pooled: vector B 1, A 2, C 3; text A 1, B 2: A 1/62 + 1/61 = B; A first (smaller id).
    { name: 'RRF over documents pools each ranking to documents, best chunk first', given: { kind: 'rrf', k: 60, w: 0.5, documents: true }, want: ['A', 'B', 'C'] },
  ];
  it.each(cases)('$name', ({ given, want }) => {
    expect(fuse(query, given)).toEqual(want);
  });

  it("z-score gives a chunk missing from a ranking that ranking's lowest normalised score", () => {
    // Text z-scores: c2 and c4 high, c1 lowest; c3 and c5 get c1's. With alpha 0 the order is text's, then by id.
    expect(fuse(query, { kind: 'convex', norm: 'zscore', alpha: 0 })).toEqual(['A', 'B', 'C']);
  });
});

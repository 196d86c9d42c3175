import { describe, expect, it } from 'vitest';
import { createBm25, idf, tokenize } from '../../bench/retrieval/bm25.ts';
import { parseQrels } from '../../bench/retrieval/dataset.ts';
import { meanOver, ndcgAt, recallAt } from '../../bench/retrieval/metrics.ts';

const judged = (grades: Record<string, number>): Map<string, number> => new Map(Object.entries(grades));
type Case = { name: string; ranking: string[]; grades: Record<string, number>; want: number };

// Expected values worked out by hand: DCG = Σ grade / log2(rank + 1), ideal from the judgments.
describe('ndcgAt(10)', () => {
  const cases: Case[] = [
    // graded: x unjudged, a = 2 at rank 2, b = 1 at rank 3; ideal a, b at ranks 1, 2.
    // (2/log2 3 + 1/log2 4) / (2 + 1/log2 3) = (1.261860 + 0.5) / 2.630930
    { name: 'graded, relevant documents below an unjudged one', ranking: ['x', 'a', 'b'], grades: { a: 2, b: 1, c: 0 }, want: 0.669672 },
    // graded, reversed: (1 + 2/log2 3 + 3/log2 4) / (3 + 2/log2 3 + 1/log2 4) = 3.761860 / 4.761860
    { name: 'graded, ideal order reversed', ranking: ['c', 'b', 'a'], grades: { a: 3, b: 2, c: 1 }, want: 0.789998 },
    // binary: hits at ranks 1 and 3 of 3 relevant: (1 + 1/2) / (1 + 1/log2 3 + 1/2) = 1.5 / 2.130930
    { name: 'binary, one relevant document not retrieved', ranking: ['a', 'x', 'b'], grades: { a: 1, b: 1, c: 1 }, want: 0.703918 },
    { name: 'binary, perfect ranking', ranking: ['a', 'b', 'x'], grades: { a: 1, b: 1 }, want: 1 },
    { name: 'graded, perfect ranking with a grade-0 document after it', ranking: ['a', 'b', 'c'], grades: { a: 2, b: 1, c: 0 }, want: 1 },
    { name: 'grade 0 and unjudged documents give nothing', ranking: ['c', 'x', 'y'], grades: { a: 2, c: 0 }, want: 0 },
    // the relevant document is at rank 11, past the cut
    { name: 'a relevant document below rank 10 does not count', ranking: [...'0123456789'.split(''), 'a'], grades: { a: 1 }, want: 0 },
    { name: 'no relevant judgment gives 0, not NaN', ranking: ['a'], grades: { a: 0 }, want: 0 },
    { name: 'a repeated id counts once', ranking: ['a', 'a', 'b'], grades: { a: 1, b: 1 }, want: 1 },
  ];
  it.each(cases)('$name', ({ ranking, grades, want }) => {
    expect(ndcgAt(10, ranking, judged(grades))).toBeCloseTo(want, 6);
  });

  it('cuts the ideal ranking at k too', () => {
    // k = 1: DCG = 1 (b first), ideal = 2 (a first); the ideal does not add a's partner below the cut.
    expect(ndcgAt(1, ['b', 'a'], judged({ a: 2, b: 1 }))).toBeCloseTo(0.5, 10);
  });
});

describe('recallAt(10)', () => {
  const cases: Case[] = [
    { name: 'one of three relevant found (grade 0 is not relevant)', ranking: ['a', 'c', 'x'], grades: { a: 2, b: 1, c: 0, d: 1 }, want: 1 / 3 },
    { name: 'all relevant found, grade ignored', ranking: ['b', 'x', 'a'], grades: { a: 2, b: 1 }, want: 1 },
    { name: 'a relevant document at rank 11 is not counted', ranking: [...'0123456789'.split(''), 'a', 'b'], grades: { a: 1, b: 1, '3': 1 }, want: 1 / 3 },
    { name: 'nothing relevant retrieved', ranking: ['x', 'y'], grades: { a: 1 }, want: 0 },
    { name: 'no relevant judgment gives 0, not NaN', ranking: ['a'], grades: { a: 0 }, want: 0 },
    { name: 'a repeated id counts once', ranking: ['a', 'a'], grades: { a: 1, b: 1 }, want: 0.5 },
  ];
  it.each(cases)('$name', ({ ranking, grades, want }) => {
    expect(recallAt(10, ranking, judged(grades))).toBeCloseTo(want, 10);
  });
});

describe('meanOver', () => {
  it('averages per query', () => {
    expect(meanOver([1, 2, 6], (x) => x)).toBe(3);
  });
  it('refuses an empty list instead of returning NaN', () => {
    expect(() => meanOver([], () => 1)).toThrow(RangeError);
  });
});

describe('parseQrels', () => {
  it('reads BEIR qrels with the header and keeps grades', () => {
    const qrels = parseQrels('query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td1\t1\n');
    expect([...qrels.keys()]).toEqual(['q1', 'q2']);
    expect(qrels.get('q1')).toEqual(
      new Map([
        ['d1', 2],
        ['d2', 0],
      ]),
    );
  });
});

describe('tokenize', () => {
  it('lower-cases runs of Unicode letters and digits and drops Lucene English stop words', () => {
    expect(tokenize('The Über-Café of 42 X-rays, and IT is “fine”!')).toEqual(['über', 'café', '42', 'x', 'rays', 'fine']);
  });
});

describe('BM25 (k1 0.9, b 0.4)', () => {
  // Every document is 2 tokens after stop words, so dl = avgdl and a term with tf 1 scores
  // exactly its idf: tf·(k1+1) / (tf + k1) = 1. N = 3; df(apple) 3, df(banana) 2, df(cherry) 1.
  const corpus = createBm25([
    { id: 'd3', title: 'Apple', text: 'the banana of' },
    { id: 'd1', title: '', text: 'apple banana' },
    { id: 'd2', title: 'apple', text: 'cherry' },
  ]);

  it('uses the always-positive Lucene IDF', () => {
    expect(idf(3, 3)).toBeCloseTo(Math.log(8 / 7), 12); // ln(1 + 0.5/3.5)
    expect(idf(3, 1)).toBeCloseTo(Math.log(8 / 3), 12); // ln(1 + 2.5/1.5)
  });

  const cases = [
    // ln(8/7) + ln(8/3) = ln(64/21) for d2; the others have apple only.
    {
      name: 'a rare term outranks a common one',
      query: 'apple cherry',
      want: [
        ['d2', 1.114361],
        ['d1', 0.133531],
        ['d3', 0.133531],
      ],
    },
    // one match each: cherry (df 1) ln(8/3) = 0.980829 beats banana (df 2) ln(1.6) = 0.470004
    {
      name: 'the rarer of two single matches wins',
      query: 'banana cherry',
      want: [
        ['d2', 0.980829],
        ['d1', 0.470004],
        ['d3', 0.470004],
      ],
    },
    // "the" and "of" are stop words, so all three tie on apple and come back by id
    {
      name: 'stop words are ignored and ties go by id',
      query: 'The apple OF',
      want: [
        ['d1', 0.133531],
        ['d2', 0.133531],
        ['d3', 0.133531],
      ],
    },
    { name: 'a query of stop words matches nothing', query: 'the of and', want: [] },
    { name: 'an unknown term matches nothing', query: 'durian', want: [] },
  ] as const;
  it.each(cases)('$name', ({ query, want }) => {
    const hits = corpus.search(query, 10);
    expect(hits.map((hit) => hit.id)).toEqual(want.map(([id]) => id));
    hits.forEach((hit, i) => expect(hit.score).toBeCloseTo(want[i]?.[1] ?? NaN, 6));
  });

  it('returns only the k best', () => {
    expect(corpus.search('apple cherry', 1).map((hit) => hit.id)).toEqual(['d2']);
  });

  it('saturates term frequency and normalises length', () => {
    // N = 2, avgdl = 3, idf(kiwi) = ln(1 + 0.5/2.5) = ln 1.2.
    // d1 (dl 2, tf 2): ln1.2 · 2·1.9 / (2 + 0.9·(0.6 + 0.4·2/3)) = 0.249217
    // d2 (dl 4, tf 1): ln1.2 · 1.9 / (1 + 0.9·(0.6 + 0.4·4/3)) = 0.171491
    const bm25 = createBm25([
      { id: 'd1', title: '', text: 'kiwi kiwi' },
      { id: 'd2', title: '', text: 'kiwi lime lime lime' },
    ]);
    const hits = bm25.search('kiwi', 10);
    expect(hits.map((hit) => hit.id)).toEqual(['d1', 'd2']);
    expect(hits[0]?.score).toBeCloseTo(0.249217, 6);
    expect(hits[1]?.score).toBeCloseTo(0.171491, 6);
  });
});

/**
 * Which fusion of the two rankings ranks best, measured offline on a capture (capture.ts):
 * nDCG@10 as run.ts computes it (metrics.ts, documents at their first chunk) for each fusion of
 * fusions.ts over a grid of its parameters, against the benchmark's BM25 (bm25.ts).
 *
 * The collection has test judgments only, so parameters are chosen by 2-fold cross-validation: the
 * queries are split in two by a hash of their id (fixed seed), each family's parameters tuned on
 * one half and scored on the other, both ways; the cross-validated score is the mean over all
 * queries of their held-out scores. The in-sample best (tuned and scored on all queries) is shown
 * too, as an upper bound, not as a result. The noise: a paired bootstrap over queries (10 000
 * resamples, fixed seed) of the cross-validated score minus plain RRF k=60's, and the gap
 * between the folds.
 *   node bench/retrieval/fusion.ts /tmp/rankings.json [collection-dir]
 *   RETRIEVAL_SAMPLE=300 node bench/retrieval/fusion.ts /tmp/rankings-300.json
 */
import { readFileSync } from 'node:fs';
import { RRF_K } from '../../src/documents/chunk-search.ts';
import { createBm25 } from './bm25.ts';
import type { Capture } from './capture.ts';
import { collectionDir, loadCollection, sampleCollection } from './dataset.ts';
import { fuse, label, type Fusion, type Normalisation } from './fusions.ts';
import { meanOver, ndcgAt } from './metrics.ts';

const K = 10;
const SEED = 'fusion-2fold';
const RESAMPLES = 10_000;
// The service's own ranking (chunk-search.ts): plain RRF with its constant.
const BASELINE: Fusion = { kind: 'rrf', k: RRF_K, w: 0.5 };

/** FNV-1a, 32 bits: the fold of a query, stable across runs and machines. */
export function foldOf(id: string): 0 | 1 {
  let hash = 0x811c9dc5;
  for (const char of `${SEED}:${id}`) hash = Math.imul(hash ^ char.charCodeAt(0), 0x01000193) >>> 0;
  return (hash & 1) as 0 | 1;
}

/** mulberry32: a small seeded generator for the bootstrap. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KS = [1, 2, 5, 10, 20, 30, 40, 60, 80, 100, 150, 200, 300];
const WEIGHTS = [0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9];
const ALPHAS = Array.from({ length: 21 }, (_, i) => i / 20);
const convex = (norm: Normalisation, documents: boolean): Fusion[] => ALPHAS.map((alpha) => ({ kind: 'convex', norm, alpha, documents }));
const FAMILIES: { name: string; grid: Fusion[] }[] = [
  { name: 'RRF, k tuned', grid: KS.map((k) => ({ kind: 'rrf', k, w: 0.5 })) },
  { name: 'weighted RRF, k and w tuned', grid: KS.flatMap((k) => WEIGHTS.map((w): Fusion => ({ kind: 'rrf', k, w }))) },
  { name: 'convex, min-max', grid: convex('minmax', false) },
  { name: 'convex, z-score', grid: convex('zscore', false) },
  { name: 'convex, theoretical min-max', grid: convex('theoretical', false) },
  { name: 'RRF over documents (max pooling), k tuned', grid: KS.map((k) => ({ kind: 'rrf', k, w: 0.5, documents: true })) },
  { name: 'weighted RRF over documents, k and w tuned', grid: KS.flatMap((k) => WEIGHTS.map((w): Fusion => ({ kind: 'rrf', k, w, documents: true }))) },
  { name: 'convex min-max over documents', grid: convex('minmax', true) },
  { name: 'convex z-score over documents', grid: convex('zscore', true) },
];

const capturePath = process.argv[2];
if (!capturePath) throw new Error('usage: node bench/retrieval/fusion.ts <capture.json> [collection-dir]');
const capture = JSON.parse(readFileSync(capturePath, 'utf8')) as Capture;
// A capture of a RETRIEVAL_SAMPLE run is scored on the same sample (dataset.ts, sampleCollection).
const whole = loadCollection(process.argv[3] ?? collectionDir());
const collection = Number(process.env.RETRIEVAL_SAMPLE ?? 0) > 0 ? sampleCollection(whole, Number(process.env.RETRIEVAL_SAMPLE)) : whole;
const judged = capture.queries.map((query) => collection.qrels.get(query.id) ?? new Map<string, number>());
const folds = capture.queries.map((query) => foldOf(query.id));
const bm25 = createBm25(collection.documents);
const text = new Map(collection.queries.map((query) => [query.id, query.text]));
const bm25PerQuery = capture.queries.map((query, i) =>
  ndcgAt(
    K,
    bm25.search(text.get(query.id)!, 1000).map((hit) => hit.id),
    judged[i]!,
  ),
);

/** Per query nDCG@10 of a fusion, memoised by label. */
const perQueryCache = new Map<string, number[]>();
function perQuery(fusion: Fusion): number[] {
  const key = label(fusion);
  let scores = perQueryCache.get(key);
  if (!scores) perQueryCache.set(key, (scores = capture.queries.map((query, i) => ndcgAt(K, fuse(query, fusion), judged[i]!))));
  return scores;
}
const indices = (fold?: 0 | 1) => capture.queries.map((_, i) => i).filter((i) => fold === undefined || folds[i] === fold);
const mean = (scores: number[], fold?: 0 | 1) => meanOver(indices(fold), (i) => scores[i]!);
/** The grid's best on `fold` (all queries without), the first of equals in grid order. */
const tuned = (grid: Fusion[], fold?: 0 | 1) => grid.reduce((best, fusion) => (mean(perQuery(fusion), fold) > mean(perQuery(best), fold) ? fusion : best));

const bm25Mean = mean(bm25PerQuery);
const baseline = perQuery(BASELINE);
const f = (x: number) => x.toFixed(4);
const ratio = (x: number, fold?: 0 | 1) => (x / mean(bm25PerQuery, fold)).toFixed(3);
console.log(`${capture.collection}: ${capture.queries.length} queries (fold 1: ${indices(0).length}, fold 2: ${indices(1).length}), ${capture.model}`);
console.log(
  `BM25 (bm25.ts) ${f(bm25Mean)}; RRF k=${RRF_K} ${f(mean(baseline))} (${ratio(mean(baseline))} ×), fold 1 ${f(mean(baseline, 0))} (${ratio(mean(baseline, 0), 0)} ×), fold 2 ${f(mean(baseline, 1))} (${ratio(mean(baseline, 1), 1)} ×)`,
);
for (const [name, fusion] of [
  ['vector alone', { kind: 'rrf', k: RRF_K, w: 1 }],
  ['full text alone', { kind: 'rrf', k: RRF_K, w: 0 }],
] as const)
  console.log(`${name}: ${f(mean(perQuery(fusion)))} (${ratio(mean(perQuery(fusion)))} ×)`);
console.log();
console.log(`| fusion | in-sample best (all queries) | fold 1, tuned on fold 2 | fold 2, tuned on fold 1 | cross-validated nDCG@10 (× BM25) | Δ vs RRF k=${RRF_K}, 95% bootstrap interval |`);
console.log('|---|---|---|---|---|---|');
const draw = random(20261128);
const picks = Array.from({ length: RESAMPLES }, () => Array.from({ length: capture.queries.length }, () => Math.floor(draw() * capture.queries.length)));
for (const family of FAMILIES) {
  const best = tuned(family.grid);
  const onFold = ([0, 1] as const).map((fold) => {
    const pick = tuned(family.grid, fold === 0 ? 1 : 0);
    return { pick, score: mean(perQuery(pick), fold), baseline: mean(baseline, fold) };
  });
  const heldOut = capture.queries.map((_, i) => perQuery(onFold[folds[i]!]!.pick)[i]!);
  const delta = heldOut.map((score, i) => score - baseline[i]!);
  const means = picks.map((pick) => pick.reduce((sum, i) => sum + delta[i]!, 0) / pick.length).sort((a, b) => a - b);
  const cell = (fold: 0 | 1) => `${label(onFold[fold]!.pick)}: ${f(onFold[fold]!.score)} (${onFold[fold]!.score >= onFold[fold]!.baseline ? '+' : ''}${f(onFold[fold]!.score - onFold[fold]!.baseline)})`;
  console.log(
    `| ${family.name} | ${label(best)}: ${f(mean(perQuery(best)))} (${ratio(mean(perQuery(best)))} ×) | ${cell(0)} | ${cell(1)} | ${f(mean(heldOut))} (${ratio(mean(heldOut))} ×) | ${f(mean(delta))} [${f(means[Math.floor(0.025 * RESAMPLES)]!)}, ${f(means[Math.ceil(0.975 * RESAMPLES) - 1]!)}] |`,
  );
}

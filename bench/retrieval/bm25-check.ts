/**
 * Sanity check of the benchmark's data and scorers: BM25 over a collection, scored as BEIR
 * scores, next to the published BM25 figures. A number far from them means the data or the
 * scorers are wrong, not that BM25 changed.
 *
 *   node bench/retrieval/bm25-check.ts [collection-dir]   (default: RETRIEVAL_COLLECTION, or ../shared/datasets/nfcorpus from the repository's root)
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createBm25 } from './bm25.ts';
import { collectionDir, loadCollection } from './dataset.ts';
import { meanOver, ndcgAt, recallAt } from './metrics.ts';

const dir = process.argv[2] ?? collectionDir();
if (!existsSync(join(dir, 'corpus.jsonl'))) {
  console.log(`no collection at ${dir} (see docs/benchmarks.md)`);
  process.exit(1);
}
const started = performance.now();
const collection = loadCollection(dir);
const bm25 = createBm25(collection.documents);
const runs = collection.queries.map((query) => ({
  judged: collection.qrels.get(query.id) ?? new Map<string, number>(),
  ranking: bm25.search(query.text, 1000).map((hit) => hit.id),
}));

const judgments = [...collection.qrels.values()].reduce((sum, judged) => sum + judged.size, 0);
console.log(`${collection.name}: ${collection.documents.length} documents, ${collection.queries.length} test queries, ${judgments} judgments`);
console.log(`BM25 (k1 0.9, b 0.4, no stemming) nDCG@10   ${meanOver(runs, (r) => ndcgAt(10, r.ranking, r.judged)).toFixed(4)}`);
console.log(`BM25 (k1 0.9, b 0.4, no stemming) Recall@10 ${meanOver(runs, (r) => recallAt(10, r.ranking, r.judged)).toFixed(4)}`);
console.log(`BM25 (k1 0.9, b 0.4, no stemming) Recall@100 ${meanOver(runs, (r) => recallAt(100, r.ranking, r.judged)).toFixed(4)}`);
console.log(`(${Math.round(performance.now() - started)} ms)`);
if (collection.name === 'nfcorpus') {
  console.log('Published, on BEIR nfcorpus (3,633 documents with raw text): BEIR paper BM25 nDCG@10 0.325;');
  console.log('Anserini BEIR flat BM25 (Porter stemming) nDCG@10 0.3218, Recall@100 0.2457.');
}

/**
 * The retrieval benchmark's printed tables and its rows for bench/index.ts: each system's nDCG@10
 * and Recall@10 and its ratio to BM25, unfiltered and on each filtered path (filtered.ts), beside
 * the aims.
 */
import { FILTERED_AIM } from './filtered.ts';
import type { FilteredScore, RetrievalOutcome, RetrievalResult, SystemScore } from './result.ts';

/** Hybrid's aim: at least this many times BM25's nDCG@10, and above each ranking alone (issue 24). */
export const RETRIEVAL_AIM = 1.15;
const K = 10;

const bm25Of = (systems: readonly SystemScore[]) => systems.find((system) => system.system.startsWith('BM25'))!;
const hybridOf = (systems: readonly SystemScore[]) => systems.find((system) => system.system === 'hybrid')!;
/** Hybrid's nDCG@10 over BM25's on the same queries and documents. */
const hybridRatio = (systems: readonly SystemScore[]) => hybridOf(systems).ndcg / bm25Of(systems).ndcg;
/** A ratio to three places, or n/a when it has no meaning (a tiny sample where BM25 finds nothing relevant). */
const ratio = (value: number) => (Number.isFinite(value) ? value.toFixed(3) : 'n/a');

function printSystems(systems: readonly SystemScore[]) {
  const bm25 = bm25Of(systems);
  console.log(`  ${'system'.padEnd(16)} nDCG@${K}  Recall@${K}  nDCG / BM25`);
  for (const system of systems) {
    console.log(`  ${system.system.padEnd(16)} ${system.ndcg.toFixed(4)}   ${system.recall.toFixed(4)}     ${ratio(system.ndcg / bm25.ndcg)}`);
  }
  // Per query against BM25: where each ranking wins and loses.
  for (const system of systems.filter((s) => s !== bm25)) {
    const better = system.perQuery.filter((value, i) => value > bm25.perQuery[i]! + 1e-9).length;
    const worse = system.perQuery.filter((value, i) => value < bm25.perQuery[i]! - 1e-9).length;
    console.log(`  ${system.system} vs BM25, per query nDCG@${K}: better ${better}, worse ${worse}, equal ${system.perQuery.length - better - worse}`);
  }
}

export function printReport(result: RetrievalResult) {
  console.log(`  unfiltered, ${result.queries} queries:`);
  printSystems(result.systems);
  const unfiltered = hybridRatio(result.systems);
  for (const path of result.filtered) {
    console.log(
      `  filtered ${path.name}: ${path.label}; ${path.queries} queries (${path.skipped} without a relevant document inside skipped), ${path.outside} hits outside the filter${path.queries ? ':' : ''}`,
    );
    if (path.queries === 0) continue;
    printSystems(path.systems);
    console.log(
      `  hybrid / BM25 filtered ${path.name} ${ratio(hybridRatio(path.systems))} against ${ratio(unfiltered)} unfiltered: ${ratio(hybridRatio(path.systems) / unfiltered)} (aim >= ${FILTERED_AIM}); unfiltered on the same ${path.queries} queries ${ratio(path.sameQueriesRatio)}`,
    );
  }
}

function filteredRows(path: FilteredScore, unfiltered: number): string[][] {
  const title = `  filtered ${path.name} (${(100 * path.share).toFixed(1)}% of docs, ${path.queries} queries, ${path.skipped} skipped): (hybrid / BM25) / unfiltered`;
  if (path.queries === 0) return [[title, 'no query has a relevant document inside its filter', `>= ${FILTERED_AIM}, 0 outside`]];
  const bm25 = bm25Of(path.systems);
  const filtered = hybridRatio(path.systems);
  return [
    [
      title,
      `${ratio(filtered / unfiltered)}  (${ratio(filtered)} = ${hybridOf(path.systems).ndcg.toFixed(4)} / ${bm25.ndcg.toFixed(4)}; unfiltered on these queries ${ratio(path.sameQueriesRatio)}; ${path.outside} hits outside)`,
      `>= ${FILTERED_AIM}, 0 outside`,
    ],
    ...path.systems
      .filter((system) => system.system !== 'hybrid')
      .map((system) => [
        `    ${system.system} nDCG@${K}, Recall@${K}, / BM25`,
        `${system.ndcg.toFixed(4)}, ${system.recall.toFixed(4)}, ${ratio(system.ndcg / bm25.ndcg)}`,
        system === bm25 ? '' : '< hybrid',
      ]),
  ];
}

/** Rows for bench/index.ts's table. */
export function retrievalRows(result: RetrievalOutcome): string[][] {
  if ('skipped' in result) return [['retrieval quality (bench/retrieval/run.ts)', `skipped: ${result.skipped}`, '']];
  const bm25 = bm25Of(result.systems);
  const hybrid = hybridOf(result.systems);
  const unfiltered = hybridRatio(result.systems);
  const rows = [
    [
      `retrieval ${result.collection} nDCG@${K}, hybrid / BM25 (${result.documents} docs, ${result.queries} queries)`,
      `${unfiltered.toFixed(3)}  (${hybrid.ndcg.toFixed(4)} / ${bm25.ndcg.toFixed(4)})`,
      `>= ${RETRIEVAL_AIM}`,
    ],
  ];
  for (const system of result.systems) {
    rows.push([
      `  ${system.system} nDCG@${K}, Recall@${K}, / BM25`,
      `${system.ndcg.toFixed(4)}, ${system.recall.toFixed(4)}, ${(system.ndcg / bm25.ndcg).toFixed(3)}`,
      system === hybrid || system === bm25 ? '' : '< hybrid',
    ]);
  }
  for (const path of result.filtered) rows.push(...filteredRows(path, unfiltered));
  const searching = Object.values(result.searchSeconds).reduce((sum, value) => sum + value, 0);
  rows.push([
    `  ingest: upload, index (${result.chunks} chunks); all searches`,
    `${result.uploadSeconds.toFixed(0)} s, ${result.indexSeconds.toFixed(0)} s (${(result.chunks / result.indexSeconds).toFixed(1)} chunks/s; ${result.failedJobs} jobs failed); ${searching.toFixed(0)} s`,
    '',
  ]);
  return rows;
}

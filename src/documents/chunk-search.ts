/**
 * The ranking behind documents.search (decisions.md, Companion AI service): the workspace's chunks
 * of the query's embedding model, ranked by meaning (cosine similarity of the vectors, pgvector's
 * HNSW index) and by words (BM25 over PostgreSQL full text), fused by reciprocal-rank fusion
 * (Cormack, Clarke and Büttcher, SIGIR 2009): a chunk's score is the sum, over the two rankings
 * that found it, of 1 / (60 + its rank there). Each ranking is read to a fixed depth whatever the
 * caller's `limit`, and ties go to the smaller chunk id, so the first ten results of `limit: 50`
 * are the results of `limit: 10`.
 *
 * SEARCH_RANKING picks `hybrid` (the default), or one ranking alone for comparison (the retrieval
 * benchmark): `vector` scores by cosine similarity, `fulltext` by BM25.
 */
import type { components } from '../../generated/types.ts';
import type { Db } from '../db/db.ts';
import type { Sql } from '../db/connection.ts';
import { highlight } from './highlights.ts';
import { vectorLiteral } from './text-store.ts';
import { searchText } from './search-words.ts';

export type SearchHit = components['schemas']['SearchHit'];
export type Citation = components['schemas']['Citation'];
export type SearchRanking = 'hybrid' | 'vector' | 'fulltext';

/** How deep each ranking is read before fusion; at least the contract's largest `limit` (50). */
export const RANKING_DEPTH = 100;
/** pgvector's candidate list per HNSW scan (see vectorRanking). */
const EF_SEARCH = 160;
/** A filter keeping at most this share of a workspace's documents is ranked by an exact scan. */
const EXACT_SHARE = 0.05;
/** RRF's constant, the paper's 60: it damps the weight of the very first ranks. */
export const RRF_K = 60;
/** BM25's parameters as in Anserini's and BEIR's baselines. */
const K1 = 0.9;
const B = 0.4;
/** A query's terms beyond this many are ignored (a 1 000-character query has fewer words). */
const MAX_TERMS = 64;
/**
 * Chunks BM25 scores at most (about). Terms are dropped from the candidate filter, most common
 * first, until the chunks containing the rest are this few; dropped terms still count in the
 * score of every candidate. A chunk that holds only very common terms scores too low to matter.
 */
const MAX_CANDIDATES = 5000;

export type SearchFilters = components['schemas']['SearchFilters'];

export interface SearchQuery {
  workspaceId: string;
  model: string;
  text: string;
  vector: number[];
  limit: number;
  filters?: SearchFilters;
}

/** A chunk of one ranking and its score there (cosine similarity, BM25, or the fused score). */
export interface Ranked {
  id: string;
  score: number;
}

export async function searchChunks(sql: Sql, query: SearchQuery, ranking: SearchRanking): Promise<SearchHit[]> {
  return sql.begin<SearchHit[]>(async (tx) => {
    let ranked: Ranked[];
    if (ranking === 'vector') ranked = await vectorRanking(tx, query);
    else if (ranking === 'fulltext') ranked = await textRanking(tx, query);
    else ranked = fuse([await vectorRanking(tx, query), await textRanking(tx, query)]);
    return describe(tx, query, ranked.slice(0, query.limit));
  });
}

/**
 * Both rankings of a query, each read to RANKING_DEPTH, best first, with its own scores: what
 * fusion starts from, for the retrieval benchmark's study of fusions (bench/retrieval/capture.ts).
 */
export async function rankChunks(sql: Sql, query: SearchQuery): Promise<{ vector: Ranked[]; text: Ranked[] }> {
  return sql.begin(async (tx) => ({ vector: await vectorRanking(tx, query), text: await textRanking(tx, query) }));
}

/**
 * The nearest chunks by cosine distance. With the workspace filter, pgvector's iterative scan keeps
 * walking the HNSW graph until it has enough matches (relaxed order, so the outer query sorts).
 */
async function vectorRanking(tx: Db, query: SearchQuery): Promise<Ranked[]> {
  // ef_search 160: recall@10 0.99+ on 100 000 chunks (bench/search.ts); the iterative scan goes on
  // past it until the depth is filled. Higher costs more than it finds, and on PGlite (10 000
  // chunks) 400 made the planner prefer a sequential scan. Custom plans: after five runs
  // PostgreSQL may switch a prepared statement to its generic plan, which sorts the whole
  // workspace instead of walking the index.
  await tx`
    select set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', ${String(EF_SEARCH)}, true),
           set_config('plan_cache_mode', 'force_custom_plan', true)`;
  const vector = vectorLiteral(query.vector);
  const f = filterValues(query);
  if (await selective(tx, query, f)) {
    // Exact: the filter's chunks, then their distances. The materialized CTE keeps the planner
    // off the HNSW index, whose walk past the many non-matching chunks costs more here.
    return tx<Ranked[]>`
      with matching as materialized (
        select c.id, c.embedding from document_chunks c
        where c.workspace_id = ${query.workspaceId} and c.model = ${query.model}
          and ${chunkMatches(tx, f)})
      select id, (1 - distance)::float8 as score from (
        select id, embedding <=> ${vector}::vector as distance from matching order by distance, id limit ${RANKING_DEPTH}
      ) nearest
      order by distance, id`;
  }
  return tx<Ranked[]>`
    select id, (1 - distance)::float8 as score from (
      select c.id, c.embedding <=> ${vector}::vector as distance
      from document_chunks c
      where c.workspace_id = ${query.workspaceId} and c.model = ${query.model}
        and ${chunkMatches(tx, f)}
      order by c.embedding <=> ${vector}::vector
      limit ${RANKING_DEPTH}
    ) nearest
    order by distance, id`;
}

/**
 * The filter's conditions on a chunk `c`: its document among `documentIds`, the document's own
 * conditions (documentMatches), and the document's current generation of chunks (text-store.ts
 * replaceChunks: a re-index in progress stays invisible). One text for every statement that reads
 * chunks, so the rankings and the counts never disagree. `f` is filterValues' JSON, one parameter
 * whatever is given, so every search sends the same statements (custom plans, bench/search.ts).
 */
function chunkMatches(tx: Db, f: string) {
  return tx`(not (${f}::text::jsonb ? 'documentIds') or c.document_id = any(array(select jsonb_array_elements_text(${f}::text::jsonb -> 'documentIds'))))
    and exists (select 1 from documents d where d.id = c.document_id and ${sameGeneration(tx)} and ${documentMatches(tx, f)})`;
}

/** A chunk `c` of its document's current generation: what BM25's statistics count, filtered or not. */
function currentGeneration(tx: Db) {
  return tx`exists (select 1 from documents d where d.id = c.document_id and ${sameGeneration(tx)})`;
}

/**
 * `c.generation = d.chunk_generation`, written as two inequalities for the planner's sake. Since
 * sql/0013 every document's chunks have a generation of their own, so PostgreSQL estimates the
 * equality of two columns with that many distinct values to keep about one chunk in ten thousand,
 * when nearly all are current: on 100 000 chunks of per-document generations it then sorted the
 * whole workspace by distance (2.0 s) instead of walking the HNSW index (45 ms). Two inequalities
 * it estimates at a third each (a ninth in all): the same rows, and the index walk again
 * (docs/benchmarks.md, "Migrations and search at scale").
 */
function sameGeneration(tx: Db) {
  return tx`c.generation >= d.chunk_generation and c.generation <= d.chunk_generation`;
}

/** The filter's conditions on a document `d`: its media type and its creation time. */
function documentMatches(tx: Db, f: string) {
  return tx`(not (${f}::text::jsonb ? 'contentTypes') or d.content_type = any(array(select jsonb_array_elements_text(${f}::text::jsonb -> 'contentTypes'))))
    and (not (${f}::text::jsonb ? 'createdAfter') or d.created_at >= (${f}::text::jsonb ->> 'createdAfter')::timestamptz)
    and (not (${f}::text::jsonb ? 'createdBefore') or d.created_at < (${f}::text::jsonb ->> 'createdBefore')::timestamptz)`;
}

/**
 * Whether a filter keeps so few of the workspace's chunks that an exact scan of them beats the
 * HNSW walk (docs/benchmarks.md, Filtered search: with 1% of the documents the iterative scan
 * costs 1.5× (PostgreSQL) to 10× (PGlite) the exact scan and misses some; with 10% and more it
 * wins). Document ids (at most 100 documents) always are; the other filters are judged by the
 * share of the workspace's documents they keep, one statement on documents, only when given.
 */
async function selective(tx: Db, query: SearchQuery, f: string): Promise<boolean> {
  const { documentIds, contentTypes, createdAfter, createdBefore } = query.filters ?? {};
  if (documentIds) return true;
  if (!contentTypes && !createdAfter && !createdBefore) return false;
  const [row] = await tx<{ matching: number; total: number }[]>`
    select count(*)::int as total, (count(*) filter (where
        ${documentMatches(tx, f)}))::int as matching
    from documents d where d.workspace_id = ${query.workspaceId}`;
  return row!.matching <= row!.total * EXACT_SHARE;
}

/**
 * Okapi BM25 over the chunks' full-text vectors (0014_text_search_languages.sql), each in its
 * document's language: IDF ln(1 + (N - df + 0.5) / (df + 0.5)) from the workspace's chunks of
 * the model, term frequency from the lexeme's positions, document length in distinct terms.
 *
 * A term is a lexeme of one configuration: the query (its CJK words split as indexing splits them,
 * search-words.ts) is analysed with each configuration the workspace's chunks use, and a term
 * matches only chunks of its configuration, so a German query word stemmed by `german` never
 * scores against English chunks, nor an English stem against German ones. Its df is that of the
 * query word it comes from (wordFrequencies): the chunks holding the word, each read in its own
 * configuration, over all of them, as N counts every chunk. Counted within its configuration
 * alone, a word common in the workspace was rare in its few chunks of another language, and those
 * chunks rose to the top of every query using it (NFCorpus: three abstracts detected as French or
 * German entered the top 10 of 28 queries, full text's nDCG@10 0.3302 -> 0.3247). With one
 * configuration (a workspace in one language) this is plain BM25 as before.
 */
async function textRanking(tx: Db, query: SearchQuery): Promise<Ranked[]> {
  const analysed = await queryTerms(tx, query);
  if (analysed.length === 0) return [];
  const f = filterValues(query);
  const [stats] = await tx<{ chunks: number; averageLength: number }[]>`
    select count(*)::int as chunks, coalesce(avg(search_length), 0)::float8 as "averageLength"
    from document_chunks c where c.workspace_id = ${query.workspaceId} and c.model = ${query.model} and ${currentGeneration(tx)}`;
  if (!stats || stats.chunks === 0) return [];
  // df over the workspace's chunks weighs each term (filters narrow the candidates, they do not
  // change the scores); df within the filter picks the candidate terms below.
  const frequencies = await tx<{ df: number; matching: number }[]>`
    select n.df, n.matching
    from jsonb_to_recordset(${tx.json(analysed.map(({ config, lexeme }, position) => ({ config, query: tsqueryTerm(lexeme), position })))}::jsonb)
      as t(config regconfig, query text, position int)
    cross join lateral (
      select count(*)::int as df, (count(*) filter (where
          ${chunkMatches(tx, f)}))::int as matching
      from document_chunks c
      where c.workspace_id = ${query.workspaceId} and c.model = ${query.model} and c.search_vector @@ t.query::tsquery
        and c.search_config = t.config and ${currentGeneration(tx)}
    ) n
    order by t.position`;
  const wordDf = wordFrequencies(analysed, frequencies, stats.chunks);
  const terms = frequencies
    .map((row, index) => ({ ...analysed[index]!, query: tsqueryTerm(analysed[index]!.lexeme), df: wordDf[index]!, matching: row.matching }))
    .filter((term) => term.matching > 0)
    .sort((a, b) => a.matching - b.matching || (a.lexeme < b.lexeme ? -1 : a.lexeme > b.lexeme ? 1 : a.config < b.config ? -1 : 1));
  if (terms.length === 0) return [];
  // The rarest terms pick the candidates (always at least one), up to MAX_CANDIDATES chunks.
  const filter: typeof terms = [];
  let covered = 0;
  for (const term of terms) {
    if (filter.length > 0 && covered + term.matching > MAX_CANDIDATES) break;
    filter.push(term);
    covered += term.matching;
  }
  const weights = terms.map((term) => ({ config: term.config, lexeme: term.lexeme, idf: Math.log(1 + (stats.chunks - term.df + 0.5) / (term.df + 0.5)) }));
  const averageLength = Math.max(stats.averageLength, 1);
  // The candidates are found by one tsquery over all configurations (the GIN index); a chunk that
  // holds a lexeme only of another configuration than its own joins no weight and drops out. The
  // configurations are regconfig columns of the recordset: read once per term, then compared as oids.
  return tx<Ranked[]>`
    select c.id, sum(t.idf * (u.tf * ${K1 + 1}::float8) / (u.tf + ${K1}::float8 * (1 - ${B}::float8 + ${B}::float8 * c.search_length / ${averageLength}::float8)))::float8 as score
    from document_chunks c
    cross join lateral (select lexeme, coalesce(array_length(positions, 1), 1) as tf from unnest(c.search_vector)) u
    join jsonb_to_recordset(${tx.json(weights)}::jsonb) as t(config regconfig, lexeme text, idf float8)
      on t.lexeme = u.lexeme and t.config = c.search_config
    where c.workspace_id = ${query.workspaceId} and c.model = ${query.model}
      and ${chunkMatches(tx, f)}
      and c.search_vector @@ ${[...new Set(filter.map((term) => term.query))].join(' | ')}::tsquery
    group by c.id
    order by score desc, c.id
    limit ${RANKING_DEPTH}`;
}

/** A lexeme of the query under one configuration, and the positions of the query's words it comes from. */
interface QueryTerm {
  config: string;
  lexeme: string;
  positions: number[];
}

/**
 * Each term's df for its IDF: the df of the query word it stems from, summed over the
 * configurations (a chunk has one, so the sums count distinct chunks), at most `chunks`. Words are
 * told apart by position: every configuration the service indexes with has PostgreSQL's default
 * parser, which numbers a text's words alike whatever dictionary then stems or drops them (a stop
 * word of one configuration keeps its number and adds nothing there). A lexeme at several
 * positions (a word repeated, or two words one stemmer merges) takes its most frequent word's df:
 * never more weight than its own chunks alone would give it.
 */
function wordFrequencies(terms: readonly QueryTerm[], frequencies: readonly { df: number }[], chunks: number): number[] {
  const byPosition = new Map<number, number>();
  terms.forEach((term, index) => {
    for (const position of term.positions) byPosition.set(position, (byPosition.get(position) ?? 0) + frequencies[index]!.df);
  });
  return terms.map((term, index) => Math.min(chunks, Math.max(frequencies[index]!.df, ...term.positions.map((position) => byPosition.get(position)!))));
}

/**
 * The query's terms: its lexemes under each configuration the workspace's chunks of the model are
 * indexed with, at most MAX_TERMS per configuration, configurations in name order and each one's
 * lexemes in tsvector order. Which configurations: one probe of the index on (workspace_id, model,
 * search_config) per configuration the server has (about 30, under a millisecond), exact whatever
 * wrote the chunks; reading the workspace's documents' languages instead took ~20 ms on a
 * workspace of 20 000 documents (PGlite).
 */
async function queryTerms(tx: Db, query: SearchQuery): Promise<QueryTerm[]> {
  return tx<QueryTerm[]>`
    select k.config, v.lexeme, v.positions::int[] as positions
    from (select p.oid::regconfig::text as config from pg_ts_config p
          where exists (select 1 from document_chunks c
                        where c.workspace_id = ${query.workspaceId} and c.model = ${query.model} and c.search_config = p.oid::regconfig)) k
    cross join lateral (
      select lexeme, positions, position from unnest(to_tsvector(k.config::regconfig, ${searchText(query.text) ?? query.text})) with ordinality as w(lexeme, positions, weights, position)
      order by position limit ${MAX_TERMS}
    ) v
    order by k.config, v.position`;
}

/**
 * The caller's filters, as JSON (absent ones left out). Every ranking statement applies them inside its
 * WHERE, together with the condition that the chunk is of its document's current generation
 * (chunks being written by a re-index, or an old generation being deleted, are not searched;
 * text-store.ts, replaceChunks), so that a filtered ranking still reads RANKING_DEPTH matching
 * chunks: on the HNSW side pgvector's iterative scan keeps walking the graph past non-matching
 * chunks (docs/benchmarks.md, Filtered search). The condition is written out in each statement
 * with parameters rather than built from optional fragments, so every search sends the same
 * statements, and as one jsonb parameter (bench/query-plan.ts records the statements and EXPLAINs
 * them with their values written as literals; text, so that postgres.js sends the string as it
 * is rather than as a JSON string); the searches use custom plans, where
 * `not ('{}' ? 'documentIds')` folds to true and an absent filter costs nothing.
 */
function filterValues(query: SearchQuery): string {
  const { documentIds, contentTypes, createdAfter, createdBefore } = query.filters ?? {};
  return JSON.stringify({ documentIds, contentTypes, createdAfter, createdBefore }); // absent ones (undefined) are left out
}

/** Reciprocal-rank fusion of rankings (best first); ties go to the smaller id. */
function fuse(rankings: Ranked[][]): Ranked[] {
  const scores = new Map<string, number>();
  for (const ranking of rankings) {
    ranking.forEach(({ id }, rank) => scores.set(id, (scores.get(id) ?? 0) + 1 / (RRF_K + rank + 1)));
  }
  return [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The hits of the ranked chunks, in the ranking's order, with their highlights. */
async function describe(tx: Db, query: SearchQuery, ranked: Ranked[]): Promise<SearchHit[]> {
  if (ranked.length === 0) return [];
  const rows = await tx<(Omit<SearchHit, 'score' | 'highlights' | 'citation'> & CitationColumns & { searchConfig: string })[]>`
    select c.id as "chunkId", c.document_id as "documentId", d.name as "documentName", c.index, c.text, c.search_config::text as "searchConfig",
           c.start_offset as "startOffset", c.end_offset as "endOffset", c.first_page as "firstPage", c.last_page as "lastPage",
           c.heading_path as "headingPath"
    from document_chunks c join documents d on d.id = c.document_id
    where c.id = any(${ranked.map((hit) => hit.id)}::text[])`;
  const byId = new Map(rows.map((row) => [row.chunkId, row]));
  const found = ranked.flatMap(({ id, score }) => {
    const row = byId.get(id);
    if (!row) return []; // deleted since it was ranked
    const { startOffset, endOffset, firstPage, lastPage, headingPath, searchConfig, ...hit } = row;
    const citation = citationOf({ startOffset, endOffset, firstPage, lastPage, headingPath });
    return [{ hit: { ...hit, score, ...(citation ? { citation } : {}) }, config: searchConfig }];
  });
  const highlights = await highlight(
    tx,
    query.text,
    found.map(({ hit, config }) => ({ text: hit.text, config })),
  );
  return found.map(({ hit }, i) => ({ ...hit, highlights: highlights[i]! }));
}

/** Where a chunk came from (0013_chunk_citations.sql); null on chunks stored before it. */
interface CitationColumns {
  startOffset: number | null;
  endOffset: number | null;
  firstPage: number | null;
  lastPage: number | null;
  headingPath: string[] | null;
}

/** A hit's `citation`, with only the members that apply; none without the chunk's offsets. */
export function citationOf(row: CitationColumns): Citation | undefined {
  if (row.startOffset === null || row.endOffset === null) return undefined;
  return {
    start: row.startOffset,
    end: row.endOffset,
    ...(row.firstPage !== null ? { pages: { first: row.firstPage, last: row.lastPage ?? row.firstPage } } : {}),
    ...(row.headingPath !== null && row.headingPath.length > 0 ? { headingPath: row.headingPath } : {}),
  };
}

/** A lexeme as a tsquery term taken literally (tsquery's quoting: '' for a quote, \\ for a backslash). */
function tsqueryTerm(lexeme: string): string {
  return `'${lexeme.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/**
 * The `highlights` of documents.search's hits: the words of each hit's text that match a word of
 * the query as the full-text ranking sees them. PostgreSQL's own `english` analyzer decides (the
 * configuration of document_chunks.search_vector and of the query's lexemes in chunk-search.ts),
 * so a highlight never disagrees with the ranking: stemmed forms match ("running" marks "runs"),
 * stop words never do. The texts are cut into words here, with their offsets; the database
 * answers, in one statement for the whole answer, which distinct words share a lexeme with the
 * query.
 */
import type { components } from '../../generated/types.ts';
import type { Db } from '../db/db.ts';

export type TextRange = components['schemas']['TextRange'];

/**
 * Runs of letters, marks and digits: the words of PostgreSQL's default parser for prose (it also
 * splits "o'clock" and "Okonkwo-Baptiste" into their parts, and indexes the parts of a hyphenated
 * word as well as the whole).
 */
const WORD = /[\p{L}\p{M}\p{N}]+/gu;

interface Word extends TextRange {
  key: string;
}

function wordsOf(text: string): Word[] {
  return [...text.matchAll(WORD)].map((match) => ({ start: match.index, end: match.index + match[0].length, key: match[0].toLowerCase() }));
}

/** Each text's ranges (in order) of the words that match the query's words; one statement for all texts. */
export async function highlight(tx: Db, query: string, texts: readonly string[]): Promise<TextRange[][]> {
  // A query without a word (the vector-only benches search with '') matches nothing: no statement.
  if (!/[\p{L}\p{M}\p{N}]/u.test(query)) return texts.map(() => []);
  const words = texts.map(wordsOf);
  const distinct = [...new Set(words.flat().map((word) => word.key))];
  if (distinct.length === 0) return texts.map(() => []);
  const rows = await tx<{ word: string }[]>`
    select w.word from unnest(${distinct}::text[]) as w(word)
    where exists (
      select 1 from unnest(to_tsvector('english'::regconfig, w.word)) as a
      join unnest(to_tsvector('english'::regconfig, ${query})) as b on a.lexeme = b.lexeme)`;
  const matching = new Set(rows.map((row) => row.word));
  return words.map((list) => list.filter((word) => matching.has(word.key)).map(({ start, end }) => ({ start, end })));
}

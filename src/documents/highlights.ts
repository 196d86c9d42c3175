/**
 * The `highlights` of documents.search's hits: the words of each hit's text that match a word of
 * the query as the full-text ranking sees them. PostgreSQL's own analyzer decides, with the hit's
 * own chunk's configuration (document_chunks.search_config: the document's language, the one its
 * chunk was indexed with and the query analysed with in chunk-search.ts), so a highlight never
 * disagrees with the ranking: stemmed forms match ("running" marks "runs", "Haus" marks
 * "Häuser" in a German hit), stop words never do. The texts are cut into words here, with their
 * offsets, Chinese, Japanese and Korean runs split into words as indexing splits them
 * (search-words.ts), so a highlight is exactly one indexed word; the database answers, in one
 * statement for the whole answer, which distinct (configuration, word) pairs share a lexeme with
 * the query.
 */
import type { components } from '../../generated/types.ts';
import type { Db } from '../db/db.ts';
import { cjkWords, hasCjk, searchText } from './search-words.ts';

export type TextRange = components['schemas']['TextRange'];

/** A hit's text and the text search configuration its chunk was indexed with. */
export interface HighlightedText {
  text: string;
  config: string;
}

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
  return [...text.matchAll(WORD)].flatMap((match) => {
    const word = match[0];
    // A run with CJK characters is the words the segmenter finds in it (a Latin word next to them included).
    if (hasCjk(word)) return cjkWords(word, match.index).map(({ start, end, word }) => ({ start, end, key: word.toLowerCase() }));
    return [{ start: match.index, end: match.index + word.length, key: word.toLowerCase() }];
  });
}

/** Each text's ranges (in order) of the words that match the query's words; one statement for all texts. */
export async function highlight(tx: Db, query: string, texts: readonly HighlightedText[]): Promise<TextRange[][]> {
  // A query without a word (the vector-only benches search with '') matches nothing: no statement.
  if (!/[\p{L}\p{M}\p{N}]/u.test(query)) return texts.map(() => []);
  const words = texts.map(({ text }) => wordsOf(text));
  const pairs = new Map<string, { config: string; word: string }>();
  texts.forEach(({ config }, i) => {
    for (const { key } of words[i]!) pairs.set(`${config}\u0000${key}`, { config, word: key });
  });
  if (pairs.size === 0) return texts.map(() => []);
  const rows = await tx<{ config: string; word: string }[]>`
    select w.config, w.word from jsonb_to_recordset(${tx.json([...pairs.values()])}::jsonb) as w(config text, word text)
    where exists (
      select 1 from unnest(to_tsvector(w.config::regconfig, w.word)) as a
      join unnest(to_tsvector(w.config::regconfig, ${searchText(query) ?? query})) as b on a.lexeme = b.lexeme)`;
  const matching = new Set(rows.map((row) => `${row.config}\u0000${row.word}`));
  return words.map((list, i) => list.filter((word) => matching.has(`${texts[i]!.config}\u0000${word.key}`)).map(({ start, end }) => ({ start, end })));
}

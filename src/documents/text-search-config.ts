/**
 * Which PostgreSQL text search configuration indexes a document of a language (issue 24, item 4):
 * the language is the ISO 639-3 code the AI service detects (ai-service/language.ts), the
 * configuration stems that language's words and drops its stop words. A language PostgreSQL has
 * no configuration for gets `simple` (words lower-cased, nothing stemmed or dropped), which still
 * matches exact words; Chinese, Japanese and Korean are split into words before (search-words.ts)
 * and are `simple` too.
 *
 * `und` (not detected: a text too short or too mixed to tell, an answer of an older AI service,
 * or a text stored before detection existed) is `english`, what every text was indexed with until
 * now: existing chunks keep their configuration without a re-index, short English texts (most
 * undetected ones) keep their stemming, and a query for them is analysed as it was.
 *
 * A configuration can be missing from a server (`estonian` exists on PostgreSQL 16+ only): the
 * stores check the name against pg_ts_config and use `simple` when it is not there.
 */

/** The configuration of an undetected language. */
export const UNDETERMINED_CONFIG = 'english';

/** ISO 639-3 -> configuration, for each configuration PostgreSQL ships (pg_ts_config) but `simple`. */
const CONFIGS: Readonly<Record<string, string>> = {
  arb: 'arabic',
  ara: 'arabic',
  hye: 'armenian',
  eus: 'basque',
  cat: 'catalan',
  dan: 'danish',
  nld: 'dutch',
  eng: 'english',
  sco: 'english',
  est: 'estonian',
  ekk: 'estonian',
  fin: 'finnish',
  fra: 'french',
  deu: 'german',
  ell: 'greek',
  hin: 'hindi',
  hun: 'hungarian',
  ind: 'indonesian',
  gle: 'irish',
  ita: 'italian',
  lit: 'lithuanian',
  nep: 'nepali',
  npi: 'nepali',
  nor: 'norwegian',
  nob: 'norwegian',
  nno: 'norwegian',
  por: 'portuguese',
  ron: 'romanian',
  rus: 'russian',
  srp: 'serbian',
  spa: 'spanish',
  swe: 'swedish',
  tam: 'tamil',
  tur: 'turkish',
  yid: 'yiddish',
  ydd: 'yiddish',
};

/** The configuration for a detected language (null or `und` when unknown). */
export function textSearchConfig(language: string | null | undefined): string {
  if (!language || language === 'und') return UNDETERMINED_CONFIG;
  return CONFIGS[language] ?? 'simple';
}

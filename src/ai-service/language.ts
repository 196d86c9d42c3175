/**
 * The language of an extracted text (issue 24, item 4), for the full-text side of search to
 * index it with that language's configuration (documents/text-search-config.ts). franc-min
 * (wooorm; trigram profiles of the 82 languages with 8 million speakers or more) names an ISO
 * 639-3 code; `und` answers a text that cannot be told.
 *
 * The text is read as up to MAX_PIECES pieces of PIECE_CHARACTERS spread across it, each detected
 * on its own, and a language must win more than half of them, each win clear (AMBIGUOUS), so cost
 * is bounded (a few milliseconds whatever the text's length), a foreign quote does not decide, and
 * a doubtful text is `und`, indexed as English as before. The pieces have one length because
 * franc's scores depend on it: it scores the best language 1 and the others 1 - (distance -
 * best's) / (300 × the text's length), so a longer text crowds every runner-up towards 1 (an
 * English paragraph repeated to 2 000 characters has Dutch at 0.95); with 200 characters, prose
 * has its runner-up at 0.65-0.9 (German's nearest, Dutch, at 0.80-0.91), while text without
 * function words is a near tie. Measured on NFCorpus's 3 162 abstracts (lower-cased, stop words
 * removed): detecting the whole text called 266 French; these rules call 3 of them non-English
 * (2 French, 1 German) and the rest `und` or English.
 *
 * It runs where the text is read: in the extraction thread, inline with a small plain text, and
 * after OCR (extraction.ts, extractor.ts).
 */
import { francAll } from 'franc-min';

/** The language of a text no one could tell. */
export const UNDETERMINED = 'und';
const PIECE_CHARACTERS = 200;
const MAX_PIECES = 8;
/** A runner-up scoring this or more (the best scores 1) makes a piece's answer unclear: it does not vote. */
const AMBIGUOUS = 0.92;
/** A piece of fewer characters (spaces and punctuation included) does not vote: franc guesses wildly on a few words. */
const MIN_CHARACTERS = 40;
/**
 * The same for a piece in Han, kana or Hangul: franc tells those languages by their script, and a
 * character there is about a word, so a short sentence is enough (franc's own default).
 */
const MIN_CJK_CHARACTERS = 10;
const CJK = /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}]/u;

export function detectLanguage(text: string): string {
  const pieces = piecesOf(text);
  const votes = new Map<string, number>();
  for (const piece of pieces) {
    const minLength = CJK.test(piece) ? MIN_CJK_CHARACTERS : MIN_CHARACTERS;
    if (piece.trim().length < minLength) continue;
    const [best, runnerUp] = francAll(piece, { minLength });
    if (!best || best[0] === UNDETERMINED || (runnerUp && runnerUp[1] >= AMBIGUOUS)) continue;
    votes.set(best[0], (votes.get(best[0]) ?? 0) + 1);
  }
  for (const [language, count] of votes) if (count * 2 > pieces.length) return language;
  return UNDETERMINED;
}

/** The pieces detected: the whole of a short text, else up to MAX_PIECES of PIECE_CHARACTERS spread evenly across it. */
export function piecesOf(text: string): string[] {
  if (text.length <= PIECE_CHARACTERS) return [text];
  const count = Math.min(MAX_PIECES, Math.floor(text.length / PIECE_CHARACTERS));
  const pieces: string[] = [];
  for (let i = 0; i < count; i++) {
    const at = count === 1 ? 0 : Math.floor(((text.length - PIECE_CHARACTERS) * i) / (count - 1));
    pieces.push(text.slice(at, at + PIECE_CHARACTERS));
  }
  return pieces;
}

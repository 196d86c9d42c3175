/**
 * The `local` embedding provider: offline, deterministic feature hashing ("the hashing trick",
 * Weinberger et al. 2009). Every lower-cased word and every pair of neighbouring words is hashed to
 * one of EMBEDDING_DIMENSIONS slots with a hashed sign (+1 or -1, so unrelated features cancel out
 * on average instead of piling up), and the sum is L2-normalised. Texts that share words and
 * phrases get a high cosine similarity; there is no notion of synonyms. It costs no network call
 * and no credit (LOCAL_EMBEDDING_MODEL).
 *
 * Stored vectors are only comparable with vectors made by the same function: changing the
 * tokeniser, the hash or the weights means a new model name and re-indexing.
 */
import { EMBEDDING_DIMENSIONS } from './protocol.ts';

/** A word pair counts half as much as a word: it sharpens phrase matches without drowning single-word ones. */
const PAIR_WEIGHT = 0.5;

/** Words: runs of letters, combining marks and digits, after Unicode compatibility folding. */
export function words(text: string): string[] {
  return text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{M}\p{N}]+/gu) ?? [];
}

/** A unit vector of EMBEDDING_DIMENSIONS numbers, rounded to 8 decimals to keep answers short. */
export function embedLocally(text: string): number[] {
  const vector = new Float64Array(EMBEDDING_DIMENSIONS);
  const add = (feature: string, weight: number) => {
    const hash = fnv1a(feature);
    const slot = mix(hash) % EMBEDDING_DIMENSIONS;
    vector[slot]! += mix(hash ^ 0x5bd1e995) >>> 31 ? weight : -weight;
  };
  const tokens = words(text);
  tokens.forEach((word, index) => {
    add(word, 1);
    if (index > 0) add(`${tokens[index - 1]} ${word}`, PAIR_WEIGHT);
  });
  // A text without a single word ("", "!!!") would be the zero vector, whose cosine with anything
  // is undefined (NaN in pgvector); all such texts share one fixed direction instead. The empty
  // feature cannot come from a word.
  if (tokens.length === 0) add('', 1);
  let norm = Math.hypot(...vector);
  // Words can cancel out exactly (two features on one slot with opposite signs).
  if (norm === 0) {
    add('', 1);
    norm = Math.hypot(...vector);
  }
  return Array.from(vector, (value) => Math.round((value / norm) * 1e8) / 1e8);
}

/** 32-bit FNV-1a over the UTF-16 code units (http://www.isthe.com/chongo/tech/comp/fnv/). */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** MurmurHash3's finaliser: FNV-1a's high bits depend weakly on the last characters; this spreads them. */
function mix(value: number): number {
  let hash = value;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

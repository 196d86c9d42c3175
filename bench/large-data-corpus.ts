/**
 * What bench/large-data.ts writes: documents of words drawn from a vocabulary, chunked and placed
 * by the service's own chunker (jobs/chunking.ts, chunk-places.ts), and an embedding per chunk.
 * Deterministic for a seed.
 *
 * Words: English stop words, then pseudo-words, drawn with Zipf's law (exponent 1.07, as in English
 * prose), so a few words are in most chunks and most words in few, and each document also draws from its
 * topic's own words (one of TOPICS): a query of a topic's words finds that topic's chunks by full
 * text, and BM25 has both common and rare terms to weigh.
 *
 * Embeddings: random but clustered, as real sentence embeddings are (bench/search-corpus.ts says
 * why uniform vectors are the wrong test for HNSW): a·common + b·topic + c·document + noise,
 * L2-normalised, every term a seeded random unit vector. Chunks of one document are close, chunks
 * of one topic less so, the rest far.
 */
import { markdownHeadings } from '../src/ai-service/text-headings.ts';
import type { TextHeading } from '../src/ai-service/protocol.ts';
import { placeChunks, type ChunkPlace } from '../src/jobs/chunk-places.ts';
import { chunkSpans } from '../src/jobs/chunking.ts';

/**
 * The most frequent words, as in English prose: PostgreSQL's `english` configuration drops them
 * (stop words), so the most common indexed words are about as common as real ones (in about one
 * chunk in six), not in every chunk.
 */
const STOP_WORDS = (
  'the of and to a in is that for it as was with be by on not he this are or his from at which but have an had they you were their what all we ' +
  'can her has there been if more when will then who so no she other its about these them than some him into only such over our very'
).split(' ');
const VOCABULARY = 20_000;
const ZIPF_EXPONENT = 1.07;
export const TOPICS = 200;
const TOPIC_WORDS = 40;
/** Share of a document's words drawn from its topic's words (the rest from the whole vocabulary). */
const TOPIC_SHARE = 0.35;
const WEIGHTS = { common: 0.5, topic: 0.8, document: 0.5, noise: 0.6 };
/** Characters per PDF page, about. */
const PAGE_CHARS = 3_000;

/** Media types and their shares of the documents: PDF (7%) and HTML (3%) make filters of both kinds (chunk-search.ts, EXACT_SHARE 5%). */
export const CONTENT_TYPES = [
  { type: 'text/markdown', share: 0.6, extension: 'md' },
  { type: 'text/plain', share: 0.3, extension: 'txt' },
  { type: 'application/pdf', share: 0.07, extension: 'pdf' },
  { type: 'text/html', share: 0.03, extension: 'html' },
] as const;

/** xoshiro128** (Blackman and Vigna): small, fast and seeded. */
export function generator(seed: number) {
  let a = seed ^ 0x9e3779b9,
    b = seed ^ 0x243f6a88,
    c = seed ^ 0xb7e15162,
    d = seed ^ 0x85a308d3;
  const next = () => {
    const result = Math.imul(rotl(Math.imul(b, 5), 7), 9);
    const t = b << 9;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return (result >>> 0) / 4294967296;
  };
  for (let i = 0; i < 16; i++) next();
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  return { next, int: (n: number) => Math.floor(next() * n), gaussian };
}
export type Random = ReturnType<typeof generator>;

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

export function unitVector(random: Random, dimensions: number): Float32Array {
  return normalise(Float32Array.from({ length: dimensions }, random.gaussian));
}

function normalise(v: Float32Array): Float32Array {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
}

/** The i-th word of the vocabulary: syllables spelling i, so every word is distinct and pronounceable. */
function word(i: number): string {
  const syllables = ['ka', 'lo', 'mi', 'ne', 'ro', 'sa', 'ti', 'vu', 'de', 'pa', 'qu', 'an', 'el', 'or', 'ix', 'um', 'be', 'go', 'hu', 'ju'];
  let text = '';
  for (let n = i + 21; n > 0; n = Math.floor(n / 20)) text += syllables[n % 20];
  return text;
}

export interface GeneratedDocument {
  topic: number;
  contentType: (typeof CONTENT_TYPES)[number];
  title: string;
  text: string;
  pageStarts: number[] | null;
  headings: TextHeading[] | null;
  chunks: ChunkPlace[];
}

/** The vocabulary, its Zipf distribution, the topics' words and vectors: one per generation run. */
export class Corpus {
  readonly random: Random;
  readonly dimensions: number;
  readonly words = [...STOP_WORDS, ...Array.from({ length: VOCABULARY - STOP_WORDS.length }, (_, i) => word(i))];
  private readonly cumulative: Float64Array;
  private readonly topicWords: string[][];
  private readonly common: Float32Array;
  private readonly topicVectors: Float32Array[];

  constructor(seed: number, dimensions: number) {
    const random = generator(seed);
    this.random = random;
    this.dimensions = dimensions;
    this.cumulative = new Float64Array(VOCABULARY);
    let sum = 0;
    for (let rank = 0; rank < VOCABULARY; rank++) this.cumulative[rank] = sum += 1 / Math.pow(rank + 1, ZIPF_EXPONENT);
    for (let rank = 0; rank < VOCABULARY; rank++) this.cumulative[rank]! /= sum;
    // Topic words from the middle of the distribution: neither stop-word common nor unseen.
    this.topicWords = Array.from({ length: TOPICS }, () => Array.from({ length: TOPIC_WORDS }, () => this.words[200 + random.int(VOCABULARY / 2)]!));
    this.common = unitVector(random, dimensions);
    this.topicVectors = Array.from({ length: TOPICS }, () => unitVector(random, dimensions));
  }

  /** A word of the whole vocabulary, by Zipf's law (binary search of the cumulative distribution). */
  private zipfWord(): string {
    const target = this.random.next();
    let low = 0;
    let high = VOCABULARY - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.cumulative[middle]! < target) low = middle + 1;
      else high = middle;
    }
    return this.words[low]!;
  }

  private wordOf(topic: number): string {
    return this.random.next() < TOPIC_SHARE ? this.topicWords[topic]![this.random.int(TOPIC_WORDS)]! : this.zipfWord();
  }

  private sentence(topic: number): string {
    const words = Array.from({ length: 6 + this.random.int(14) }, () => this.wordOf(topic));
    const first = words[0]!;
    words[0] = first[0]!.toUpperCase() + first.slice(1);
    return `${words.join(' ')}.`;
  }

  private title(topic: number): string {
    return Array.from({ length: 2 + this.random.int(3) }, () => this.topicWords[topic]![this.random.int(TOPIC_WORDS)]!).join(' ');
  }

  /**
   * A document of about `characters` characters: Markdown with `#` headings (read back by the
   * AI service's own markdownHeadings), HTML as its extracted text (headings without marks, placed
   * here), plain text, or a PDF's text with where each page starts. At most `maxChunks` chunks:
   * the text is cut after the last one.
   */
  document(characters: number, maxChunks: number): GeneratedDocument {
    const topic = this.random.int(TOPICS);
    const contentType = this.contentType();
    const title = this.title(topic);
    const markdown = contentType.type === 'text/markdown';
    const parts: string[] = [];
    const headings: TextHeading[] = [];
    const pageStarts: number[] = [0];
    let length = 0;
    const push = (text: string) => {
      parts.push(text);
      length += text.length + 2; // the paragraph break after it
    };
    if (contentType.type !== 'application/pdf' && contentType.type !== 'text/plain') {
      if (!markdown) headings.push({ start: length, level: 1, text: title });
      push(markdown ? `# ${title}` : title);
    }
    for (let section = 1; length < characters; section++) {
      if (contentType.type !== 'application/pdf' && contentType.type !== 'text/plain' && this.random.next() < 0.5) {
        const heading = `${section}. ${this.title(topic)}`;
        if (!markdown) headings.push({ start: length, level: 2, text: heading });
        push(markdown ? `## ${heading}` : heading);
      }
      for (let n = 1 + this.random.int(3); n > 0 && length < characters; n--) {
        if (contentType.type === 'application/pdf' && length - pageStarts.at(-1)! > PAGE_CHARS) pageStarts.push(length);
        push(Array.from({ length: 3 + this.random.int(5) }, () => this.sentence(topic)).join(' '));
      }
    }
    const place = (text: string) => {
      const found = markdown ? markdownHeadings(text) : headings.filter((heading) => heading.start < text.length);
      const pages = contentType.type === 'application/pdf' ? pageStarts.filter((start) => start < text.length) : null;
      const placedHeadings = found.length > 0 ? found : null;
      return { text, pageStarts: pages, headings: placedHeadings, chunks: placeChunks(chunkSpans(text), pages, placedHeadings) };
    };
    let placed = place(parts.join('\n\n'));
    // Cut after the last chunk wanted; the chunker may then cut the new end differently, so again until it fits.
    while (placed.chunks.length > maxChunks) placed = place(placed.text.slice(0, placed.chunks[maxChunks - 1]!.end));
    return { topic, contentType, title, ...placed };
  }

  private contentType(): (typeof CONTENT_TYPES)[number] {
    let roll = this.random.next();
    for (const type of CONTENT_TYPES) {
      if (roll < type.share) return type;
      roll -= type.share;
    }
    return CONTENT_TYPES[0];
  }

  /** A direction of its own for a document: its chunks cluster around topic + direction. */
  documentDirection(): Float32Array {
    return unitVector(this.random, this.dimensions);
  }

  /** One chunk's embedding: the common, topic and document directions plus noise, L2-normalised. */
  embedding(topic: number, direction: Float32Array): Float32Array {
    const v = new Float32Array(this.dimensions);
    const t = this.topicVectors[topic]!;
    const noise = WEIGHTS.noise / Math.sqrt(this.dimensions);
    for (let i = 0; i < this.dimensions; i++) v[i] = WEIGHTS.common * this.common[i]! + WEIGHTS.topic * t[i]! + WEIGHTS.document * direction[i]! + noise * this.random.gaussian();
    return normalise(v);
  }

  /** A query a user might type: a few of a topic's words, now and then a common word or a stop word. */
  query(random: Random = this.random): string {
    const topic = random.int(TOPICS);
    const words = Array.from({ length: 2 + random.int(3) }, () => this.topicWords[topic]![random.int(TOPIC_WORDS)]!);
    for (let n = random.int(3); n > 0; n--) words.push(this.words[random.int(STOP_WORDS.length + 200)]!);
    return words.join(' ');
  }
}

/**
 * all-MiniLM-L6-v2 the way sentence-transformers runs it (its modules.json: BERT, then mean
 * pooling, then normalisation): WordPiece tokens with [CLS] and [SEP], at most MAX_TOKENS of them
 * (its `max_seq_length`), the encoder's `last_hidden_state` averaged over the real tokens
 * (attention mask 1), scaled to length 1.
 *
 * onnxruntime-node's `session.run` is synchronous under its promise (a setImmediate around the
 * native call): a batch blocks the calling thread for up to about a second. So this module is
 * loaded by embedder-thread.ts in a worker thread, never on the service's event loop; tests call it
 * directly.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tokenizer as UntypedTokenizer } from '@huggingface/tokenizers';
import ort from 'onnxruntime-node';
import { MAX_TOKENS, MODEL_GRAPH, MODEL_TOKENIZER, MODEL_TOKENIZER_CONFIG } from './model-files.ts';
import { EMBEDDING_DIMENSIONS } from './protocol.ts';

export interface SentenceEmbedderOptions {
  /** onnxruntime's threads inside one inference call (intraOpNumThreads). */
  threads?: number;
  /** Texts per inference call; the embedder's queue sends one batch at a time anyway. */
  batchSize?: number;
  /**
   * Whether onnxruntime's pool threads spin while waiting for work between the graph's nodes
   * (its default). Off, they sleep: on a machine whose cores other work needs, spinning threads
   * take CPU from it and from each other.
   */
  spin?: boolean;
}

export interface SentenceEmbeddings {
  /** One unit vector per text, in input order. */
  vectors: Float32Array[];
  /** Tokens the model read, [CLS] and [SEP] included, after truncation. */
  tokens: number;
}

export interface SentenceEmbedder {
  embed(texts: readonly string[]): Promise<SentenceEmbeddings>;
  close(): Promise<void>;
}

/**
 * The part of the tokenizer used here, typed by hand: the package's .d.ts files import each other
 * without file extensions, which `nodenext` resolution cannot follow, so its own types arrive as `any`.
 */
interface WordPieceTokenizer {
  token_to_id(token: string): number | undefined;
  encode(text: string, options: { add_special_tokens: boolean }): { ids: number[] };
}
const Tokenizer = UntypedTokenizer as unknown as new (tokenizer: unknown, config: unknown) => WordPieceTokenizer;

/** Loads the model folder (model-files.ts); throws when a file is missing or the graph cannot load. */
export async function loadSentenceEmbedder(dir: string, options: SentenceEmbedderOptions = {}): Promise<SentenceEmbedder> {
  const [tokenizerJson, tokenizerConfig] = await Promise.all([
    readFile(join(dir, MODEL_TOKENIZER), 'utf8').then((text): unknown => JSON.parse(text)),
    readFile(join(dir, MODEL_TOKENIZER_CONFIG), 'utf8').then((text): unknown => JSON.parse(text)),
  ]);
  const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
  const cls = tokenizer.token_to_id('[CLS]');
  const sep = tokenizer.token_to_id('[SEP]');
  if (cls === undefined || sep === undefined) throw new Error('the tokenizer has no [CLS] or [SEP] token');
  const session = await ort.InferenceSession.create(join(dir, MODEL_GRAPH), {
    intraOpNumThreads: options.threads ?? 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // The arena keeps the largest batch's memory for good (about 430 MB RSS after batches of
    // 16 x 256 tokens, 230-270 MB without it), for no measurable speed.
    enableCpuMemArena: false,
    ...(options.spin === false ? { extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } } } : {}),
  });
  const expected = ['input_ids', 'attention_mask', 'token_type_ids'];
  if (!expected.every((name) => session.inputNames.includes(name)) || !session.outputNames.includes('last_hidden_state')) {
    throw new Error(`the model's inputs (${session.inputNames.join(', ')}) or outputs (${session.outputNames.join(', ')}) are not BERT's`);
  }

  /** Token ids with [CLS] and [SEP], cut to MAX_TOKENS as Hugging Face's right truncation does. */
  const encode = (text: string): number[] => {
    const ids = tokenizer.encode(text, { add_special_tokens: false }).ids;
    return [cls, ...ids.slice(0, MAX_TOKENS - 2), sep];
  };

  const run = async (batch: number[][]): Promise<Float32Array[]> => {
    const length = Math.max(...batch.map((ids) => ids.length));
    const size = batch.length * length;
    const inputIds = new BigInt64Array(size);
    const mask = new BigInt64Array(size);
    batch.forEach((ids, row) =>
      ids.forEach((id, column) => {
        inputIds[row * length + column] = BigInt(id);
        mask[row * length + column] = 1n;
      }),
    );
    const dims = [batch.length, length];
    const feeds = {
      input_ids: new ort.Tensor('int64', inputIds, dims),
      attention_mask: new ort.Tensor('int64', mask, dims),
      // One segment: every position is type 0.
      token_type_ids: new ort.Tensor('int64', new BigInt64Array(size), dims),
    };
    const output = (await session.run(feeds)).last_hidden_state!;
    const hidden = output.data as Float32Array;
    try {
      return batch.map((ids, row) => meanPooled(hidden, row, length, ids.length));
    } finally {
      output.dispose();
    }
  };

  const batchSize = options.batchSize ?? 8;
  return {
    async embed(texts) {
      const encoded = texts.map(encode);
      // Longest first, cut where padding would cost more than another call (paddedRuns).
      const order = encoded.map((_, index) => index).sort((a, b) => encoded[b]!.length - encoded[a]!.length);
      const vectors = new Array<Float32Array>(texts.length);
      let start = 0;
      for (const size of paddedRuns(
        order.map((index) => encoded[index]!.length),
        batchSize,
      )) {
        const indexes = order.slice(start, (start += size));
        const pooled = await run(indexes.map((index) => encoded[index]!));
        indexes.forEach((index, position) => {
          vectors[index] = pooled[position]!;
        });
      }
      return { vectors, tokens: encoded.reduce((sum, ids) => sum + ids.length, 0) };
    },
    async close() {
      await session.release();
    },
  };
}

/**
 * What an inference call costs beyond its padded tokens, in tokens: a row's share of the call
 * (ROW_COST × the longest row) and the call itself (CALL_COST). Measured with two threads on two
 * cores (docs/benchmarks.md, "Batches cut by length"): time grows with rows × longest row at about
 * 0.41 ms a token, and a call of one row costs about a quarter of a row more.
 */
const ROW_COST = 0.25;
const CALL_COST = 8;

/**
 * How to cut texts of these token counts, longest first, into inference calls of at most `most`
 * rows each: the sizes of the runs, in order, that cost least in padded tokens plus each call's
 * own cost. Every row of a call is padded to its longest, so a batch the embedder's queue gathered
 * from several documents (a 256-token chunk beside a document's 30-token tail) would mostly
 * compute padding in one call; two cost less. Texts of one length stay in calls of `most`.
 */
export function paddedRuns(lengths: readonly number[], most: number): number[] {
  // best[start]: the least cost of the texts from `start` on; run[start]: the size of its first call.
  // Larger runs are tried first and kept on a tie, so texts of one length go `most` at a time.
  const best: number[] = [];
  const run: number[] = [];
  best[lengths.length] = 0;
  for (let start = lengths.length - 1; start >= 0; start--) {
    best[start] = Infinity;
    for (let size = Math.min(most, lengths.length - start); size >= 1; size--) {
      const cost = (size + ROW_COST) * lengths[start]! + CALL_COST + best[start + size]!;
      if (cost < best[start]!) {
        best[start] = cost;
        run[start] = size;
      }
    }
  }
  const runs: number[] = [];
  for (let start = 0; start < lengths.length; start += run[start]!) runs.push(run[start]!);
  return runs;
}

/**
 * The mean of a row's first `tokens` hidden states (the rest is padding, attention mask 0),
 * L2-normalised. [CLS] is always there, so the mean is never over nothing.
 */
function meanPooled(hidden: Float32Array, row: number, length: number, tokens: number): Float32Array {
  const sum = new Float64Array(EMBEDDING_DIMENSIONS);
  const start = row * length * EMBEDDING_DIMENSIONS;
  for (let token = 0; token < tokens; token++) {
    const offset = start + token * EMBEDDING_DIMENSIONS;
    for (let dimension = 0; dimension < EMBEDDING_DIMENSIONS; dimension++) sum[dimension]! += hidden[offset + dimension]!;
  }
  // Dividing by `tokens` before normalising changes nothing in the direction; it is skipped.
  // sentence-transformers clamps the norm at 1e-12 (torch.nn.functional.normalize's eps).
  let norm = 0;
  for (const value of sum) norm += value * value;
  const scale = 1 / Math.max(Math.sqrt(norm), 1e-12);
  return Float32Array.from(sum, (value) => value * scale);
}

/**
 * The Embedder the AI service uses (embedder.ts): the local model in its worker thread, and how
 * it behaves when that thread or the model files fail.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedder, createLocalEmbedder } from '../../src/ai-service/embedder.ts';
import { HttpError } from '../../src/ai-service/http-exchange.ts';
import { DEFAULT_MODEL_DIR, MODEL_FILES } from '../../src/ai-service/model-files.ts';
import { LOCAL_EMBEDDING_MODEL } from '../../src/ai-service/protocol.ts';
import { logger, settings } from './support.ts';

/** One onnxruntime thread, batches of 16 (twoBatches below), niceness 10: the model's setup in these tests. */
const ONE_THREAD = { threads: 1, batchSize: 16, nice: 10 };
/** About 130 tokens each: a batch of 16 keeps the thread busy for half a second. */
const long = (index: number) => `Report ${index}. ${'The committee reviewed the annual budget and the staffing plan in detail. '.repeat(10)}`;
/** Two batches: a full one, then one text. */
const twoBatches = () => Array.from({ length: 17 }, (_, index) => long(index));

describe('the local embedder', () => {
  const embedder = createLocalEmbedder(DEFAULT_MODEL_DIR, ONE_THREAD, logger);
  // Each thread starts with its lane's first request: both are loaded before the tests, which
  // watch them working, not loading.
  beforeAll(() => Promise.all([embedder.embed(twoBatches().slice(0, 5)), embedder.embed(['warm query'])]));
  afterAll(() => embedder.close());

  it('names its model and has no problem', async () => {
    const { vectors, model, usage } = await embedder.embed(['hello world']);
    expect({ model: embedder.model, answered: model, problem: embedder.problem(), usage }).toEqual({
      model: LOCAL_EMBEDDING_MODEL,
      answered: LOCAL_EMBEDDING_MODEL,
      problem: null,
      usage: { prompt_tokens: 4, total_tokens: 4 },
    });
    expect(vectors[0]).toHaveLength(384);
  });

  it('keeps the event loop free while the model works, and lets a short request pass a long one', async () => {
    let worstLag = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      worstLag = Math.max(worstLag, now - last - 10);
      last = now;
    }, 10);
    const order: string[] = [];
    const large = embedder.embed(twoBatches()).then(() => order.push('large'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const small = embedder.embed(['a quick search query']).then(() => order.push('small'));
    await Promise.all([large, small]);
    clearInterval(timer);
    expect(order).toEqual(['small', 'large']);
    // One batch blocks its thread for half a second: run on this thread, it would hold the event
    // loop that long. In its thread the loop sees only timer jitter, which a busy machine (the
    // whole suite on two cores) stretches past 150 ms; 400 still tells the two apart.
    expect(worstLag).toBeLessThan(400);
  });

  it('fails the call its thread died in, with a 502, and answers the next call on a new thread', async () => {
    const pending = embedder.embed(twoBatches());
    embedder.crashThread();
    const error = await pending.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ status: 502 });
    const { vectors } = await embedder.embed(['still working']);
    expect(vectors).toHaveLength(1);
    expect(embedder.problem()).toBeNull();
  });
});

describe('when the embedder cannot serve, or is closed', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'embedder-test-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('says which files are missing, names the install command, and answers 503', async () => {
    const embedder = createEmbedder(settings(), logger, { modelDir: join(scratch, 'nothing-here') });
    expect(embedder.model).toBe(LOCAL_EMBEDDING_MODEL);
    expect(embedder.problem()).toMatch(/not installed \(onnx\/model_q4\.onnx, .*\): run .*scripts\/install-model\.ts/);
    expect(embedder.problem()).not.toContain(scratch);
    await expect(embedder.embed(['a'])).rejects.toMatchObject({ name: 'HttpError', status: 503 });
    await embedder.close();
  });

  it('refuses a model file that does not match its pinned SHA-256', async () => {
    const dir = join(scratch, 'tampered');
    mkdirSync(join(dir, 'onnx'), { recursive: true });
    for (const file of MODEL_FILES) symlinkSync(join(DEFAULT_MODEL_DIR, file.path), join(dir, file.path));
    // Same size, one byte changed.
    const config = join(dir, 'tokenizer_config.json');
    const bytes = readFileSync(config);
    rmSync(config);
    bytes[bytes.length - 2]! ^= 1;
    writeFileSync(config, bytes);
    const embedder = createLocalEmbedder(dir, ONE_THREAD, logger);
    const error = await embedder.embed(['a']).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 503, message: expect.stringContaining('failed to load') });
    expect(embedder.problem()).toMatch(/failed to load/);
    expect(embedder.problem()).not.toContain(dir);
    await embedder.close();
  });

  it('answers 503 once closed, and close is safe while work is in flight', async () => {
    const embedder = createLocalEmbedder(DEFAULT_MODEL_DIR, ONE_THREAD, logger);
    const pending = embedder.embed(twoBatches()).catch((caught: unknown) => caught);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await embedder.close();
    expect(await pending).toMatchObject({ status: 503 });
    await expect(embedder.embed(['a'])).rejects.toMatchObject({ status: 503 });
  });

  it('reports the openai provider without a key', async () => {
    const embedder = createEmbedder(settings({ provider: 'openai' }), logger);
    expect(embedder.model).toBe('text-embedding-3-small');
    expect(embedder.problem()).toContain('OPENAI_API_KEY');
    await expect(embedder.embed(['a'])).rejects.toMatchObject({ status: 503 });
    await embedder.close();
  });
});

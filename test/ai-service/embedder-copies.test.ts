/**
 * The documents' lane with two copies of the model (embedder.ts, LocalModelSetup.copies: what the
 * service runs for EMBEDDING_THREADS 2): batches go to whichever copy is free, so one request's
 * batches run on both at once and may come back in any order; its answer is still each text's
 * vector in its place, as one copy gives it. A few texts are shared among the idle copies. A copy that dies fails the requests of its batch and
 * is replaced; the other goes on. The order of events is read from the batches the embedder
 * reports sending (its `watch`) and from its stats, never from the clock.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalEmbedder } from '../../src/ai-service/embedder.ts';
import { HttpError } from '../../src/ai-service/http-exchange.ts';
import { DEFAULT_MODEL_DIR } from '../../src/ai-service/model-files.ts';
import { logger } from './support.ts';

/** Texts of different lengths (about 20 to 140 tokens), so batches differ in cost. */
const texts = (name: string, count: number) =>
  Array.from({ length: count }, (_, index) => `${name} ${index}. ${'The committee reviewed the annual budget and the staffing plan. '.repeat(1 + (index % 7))}`);

const largestDifference = (a: number[], b: number[]) => Math.max(...a.map((value, index) => Math.abs(value - b[index]!)));

describe("the documents' lane with two copies of the model", () => {
  const two = createLocalEmbedder(DEFAULT_MODEL_DIR, { threads: 1, copies: 2, batchSize: 8, nice: 0 }, logger);
  afterAll(() => two.close());

  /** Sends requests of two batches until both copies take one at once: both are loaded. */
  const bothLoaded = async () => {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const answered = two.embed(texts('warm', 16));
      const running = two.stats()!.running;
      await answered;
      if (running === 2) return;
    }
    throw new Error('the second copy never took a batch');
  };

  it("answers a request whose batches ran on both copies with each text's vector as one copy alone gives it", async () => {
    const one = createLocalEmbedder(DEFAULT_MODEL_DIR, { threads: 1, batchSize: 8, nice: 0 }, logger);
    try {
      await bothLoaded();
      const input = texts('report', 64);
      const shared = two.embed(input, { organization: 'org-a' });
      // Sent at once: each idle copy took a batch of it.
      expect(two.stats()!.running).toBe(2);
      const alone = await one.embed(input);
      const { vectors, usage } = await shared;
      expect(vectors).toHaveLength(input.length);
      for (const [at, vector] of vectors.entries()) expect(largestDifference(vector, alone.vectors[at]!)).toBeLessThan(1e-5);
      expect(usage?.prompt_tokens).toBe(alone.usage?.prompt_tokens);
    } finally {
      await one.close();
    }
  });

  it('shares a few texts among the idle copies: a small request runs on both', async () => {
    await bothLoaded();
    const input = texts('pair', 2);
    const answered = two.embed(input, { organization: 'org-c', purpose: 'document' });
    expect(two.stats()!.running).toBe(2);
    expect((await answered).vectors).toHaveLength(2);
  });

  it('fails the requests of the batch a copy died in with a 502, replaces the copy, and answers the next calls', async () => {
    const pending = two.embed(texts('doomed', 40), { organization: 'org-b' });
    two.crashThread();
    const error = await pending.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(HttpError);
    expect(error).toMatchObject({ status: 502 });
    const input = texts('after', 24);
    const { vectors } = await two.embed(input, { organization: 'org-b' });
    expect(vectors).toHaveLength(input.length);
    expect(vectors.every((vector) => vector.length === 384)).toBe(true);
    expect(two.problem()).toBeNull();
    // The copy that died was replaced: two take batches at once again.
    await bothLoaded();
  });
});

/**
 * Turns by round (issue 40, embedding queue): organizations A and B run long jobs one at a time,
 * each sent as soon as the one before is answered, while C waits with one indexing request. Each
 * time A's or B's request is done the organization has nothing waiting or running for a moment;
 * were it then forgotten, its next request would count as never served and go ahead of C, which
 * has been served, and A and B would take turns ahead of C until they stopped. C must instead be
 * served within one round: between two of C's turns, no other organization gets two.
 *
 * The real fair queue and the real embedder with its model thread; the order of service is read
 * from the tasks as they start and from the batches the embedder reports sending (its `watch`),
 * never from the clock.
 */
import { describe, expect, it } from 'vitest';
import { createLocalEmbedder, type BatchSent } from '../../src/ai-service/embedder.ts';
import { createFairQueue } from '../../src/ai-service/fair-queue.ts';
import { DEFAULT_MODEL_DIR } from '../../src/ai-service/model-files.ts';
import { logger } from './support.ts';

/** Each organization's turns in `turns` (in order of service) from C's first on: how many others had before each of C's. */
function othersBetweenTurnsOfC(turns: string[]): Record<string, number>[] {
  const rounds: Record<string, number>[] = [];
  let round: Record<string, number> = {};
  for (const organization of turns) {
    if (organization === 'C') {
      rounds.push(round);
      round = {};
    } else round[organization] = (round[organization] ?? 0) + 1;
  }
  return rounds;
}

const JOBS = 6;

describe('the fair queue (extraction and OCR)', () => {
  it('serves the second of C’s two documents within one round while A and B send one job after another', async () => {
    const queue = createFairQueue({ capacity: 1, maxWaiting: 100, maxWaitingPerGroup: 100, retryAfterSeconds: 1 }, 'documents');
    const turns: string[] = [];
    const task = (organization: string) => async () => {
      turns.push(organization);
      // A job's work: it ends after the others have had the chance to queue behind it.
      await new Promise((resolve) => setImmediate(resolve));
    };
    const backToBack = async (organization: string) => {
      for (let job = 0; job < JOBS; job += 1) await queue.run(organization, task(organization));
    };
    const a = backToBack('A');
    const b = backToBack('B');
    // C indexes two documents at once while A and B are at work.
    await new Promise((resolve) => setImmediate(resolve));
    const c = Promise.all([queue.run('C', task('C')), queue.run('C', task('C'))]);
    await Promise.all([a, b, c]);

    expect(turns.filter((organization) => organization === 'C')).toHaveLength(2);
    const rounds = othersBetweenTurnsOfC(turns.slice(turns.indexOf('C')));
    // Between C's first and second, A and B once each at most; C is not last.
    expect(rounds[1]).toEqual({ A: 1, B: 1 });
    expect(turns.at(-1)).not.toBe('C');
  });
});

/** About 130 tokens each, like the chunks of a document; text.embed sends up to four of 8 000 characters. */
const long = (name: string, count: number) =>
  Array.from({ length: count }, (_, index) => `${name} report ${index}. ${'The committee reviewed the annual budget and the staffing plan in detail. '.repeat(10)}`);

describe("the embedder's documents' lane, with its model", () => {
  // A round spans several batches when more organizations wait than a batch has slots: three
  // organizations and batches of one text here, as nine would with the default of 8. (With fewer
  // organizations than slots each one waiting has a share of every batch, returning or not.)
  it.each([{ batchSize: 1, textsPerJob: 4 }])('serves C within one round while A and B send jobs of $textsPerJob long texts back to back (batches of $batchSize)', async ({ batchSize, textsPerJob }) => {
    const batches: BatchSent[] = [];
    let sawB!: () => void;
    const bServed = new Promise<void>((resolve) => (sawB = resolve));
    const embedder = createLocalEmbedder(DEFAULT_MODEL_DIR, { threads: 1, batchSize, nice: 0 }, logger, (batch) => {
      batches.push(batch);
      if (batch.parts.some((part) => part.organization === 'B')) sawB();
    });
    try {
      const backToBack = async (organization: string) => {
        for (let job = 0; job < JOBS; job += 1) await embedder.embed(long(`${organization}${job}`, textsPerJob), { organization, purpose: 'document' });
      };
      const a = backToBack('A');
      const b = backToBack('B');
      await bServed;
      // C's index request: six chunks, so it needs several turns.
      const arrived = batches.length;
      const c = embedder.embed(long('C', 6), { organization: 'C', purpose: 'document' });
      await Promise.all([a, b, c]);

      const turns = batches.slice(arrived).flatMap((batch) => batch.parts.map((part) => part.organization));
      const lastOfC = turns.lastIndexOf('C');
      const rounds = othersBetweenTurnsOfC(turns.slice(0, lastOfC + 1));
      // Before each of C's turns since it arrived, A and B once each at most.
      for (const round of rounds) for (const count of Object.values(round)) expect(count).toBeLessThanOrEqual(1);
      // C's texts were all sent while A and B still had jobs to send.
      expect(lastOfC).toBeLessThan(turns.length - 1);
    } finally {
      await embedder.close();
    }
  });
});

/**
 * The local embedder's documents' batches gather the requests waiting, of several organizations
 * (embedder.ts, embedding-batches.ts), with the real model in its threads. The order of events is
 * read from the batches the embedder reports sending (its `watch`), never from the clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalEmbedder, type BatchSent } from '../../src/ai-service/embedder.ts';
import { HttpError } from '../../src/ai-service/http-exchange.ts';
import { DEFAULT_MODEL_DIR } from '../../src/ai-service/model-files.ts';
import { logger } from './support.ts';

/** Batches of 16 texts on one onnxruntime thread at the API's priority (support.ts says why). */
const MODEL = { threads: 1, batchSize: 16, nice: 0 };

/** More than QUERY_TEXTS texts, so they go to the documents' thread; short, so a batch is quick. */
const texts = (name: string, count: number) => Array.from({ length: count }, (_, index) => `${name} note ${index}: the committee met about the ${index % 3 ? 'allotment' : 'library'} budget.`);
/** About 130 tokens each: a batch of 16 keeps the thread busy while the test queues more. */
const long = (name: string, count: number) =>
  Array.from({ length: count }, (_, index) => `${name} report ${index}. ${'The committee reviewed the annual budget and the staffing plan in detail. '.repeat(10)}`);

const largestDifference = (a: number[], b: number[]) => Math.max(...a.map((value, index) => Math.abs(value - b[index]!)));

describe("the documents' batches", () => {
  const batches: BatchSent[] = [];
  const waiters: { condition: (batch: BatchSent) => boolean; resolve: (batch: BatchSent) => void }[] = [];
  const embedder = createLocalEmbedder(DEFAULT_MODEL_DIR, MODEL, logger, (batch) => {
    batches.push(batch);
    for (const waiter of waiters.splice(0)) {
      if (waiter.condition(batch)) waiter.resolve(batch);
      else waiters.push(waiter);
    }
  });
  /** The next batch sent that holds texts of `organization`. */
  const batchOf = (organization: string) => new Promise<BatchSent>((resolve) => waiters.push({ condition: (batch) => batch.parts.some((part) => part.organization === organization), resolve }));
  const documentBatches = () => batches.filter((batch) => batch.thread === 'embedder');
  /** Texts of `organization` in a batch. */
  const count = (batch: BatchSent, organization: string) => batch.parts.filter((part) => part.organization === organization).reduce((sum, part) => sum + part.texts.length, 0);

  beforeAll(async () => {
    // Both threads loaded, so each test starts with idle threads.
    await Promise.all([embedder.embed(texts('warm', 5)), embedder.embed(['warm query'])]);
  });
  afterAll(() => embedder.close());

  it('answers requests of several organizations sent at once, each text as it is alone, in fewer batches than requests', async () => {
    batches.length = 0;
    const before = embedder.stats()!;
    const requests = ['org-a', 'org-b', 'org-c', 'org-d', 'org-e', 'org-f'].map((organization, at) => ({ organization, texts: texts(organization, 5 + at) }));
    const answers = await Promise.all(requests.map((request) => embedder.embed(request.texts, { organization: request.organization })));
    const after = embedder.stats()!;
    // The first goes alone to the idle thread; the others, waiting behind it, share the next batches.
    expect(after.batches - before.batches).toBeLessThan(requests.length);
    expect(after.batches - before.batches).toBe(documentBatches().length);
    expect(documentBatches().some((batch) => new Set(batch.parts.map((part) => part.organization)).size > 1)).toBe(true);
    expect(after.texts - before.texts).toBe(requests.reduce((sum, request) => sum + request.texts.length, 0));

    let usage = 0;
    let alone = 0;
    for (const [at, request] of requests.entries()) {
      expect(answers[at]!.vectors).toHaveLength(request.texts.length);
      usage += answers[at]!.usage!.prompt_tokens;
      for (const [index, text] of request.texts.entries()) {
        const single = await embedder.embed([text]);
        alone += single.usage!.prompt_tokens;
        expect(largestDifference(answers[at]!.vectors[index]!, single.vectors[0]!)).toBeLessThan(1e-5);
      }
    }
    // Each request's usage is its share of its batches' tokens; together they are every token.
    expect(usage).toBe(alone);
    expect(after).toMatchObject({ running: 0, waiting: 0 });
  });

  it('serves organizations that arrive behind a backlog in their first batch, none past its share', async () => {
    batches.length = 0;
    const finished: string[] = [];
    const send = (organization: string, list: string[]) => embedder.embed(list, { organization }).then(() => finished.push(organization));
    // A's 200 texts: the first batch goes at once, the rest wait; then B and C arrive.
    const calls = [0, 1, 2, 3].map((request) => send('org-a', texts(`a${request}`, 50)));
    calls.push(send('org-b', texts('b', 5)), send('org-c', texts('c', 5)));
    await Promise.all(calls);

    const sent = documentBatches();
    expect(sent[0]!.parts.map((part) => part.organization)).toEqual(['org-a']);
    // B and C, never served, go first in the second batch; A takes what they leave.
    expect(['org-a', 'org-b', 'org-c'].map((organization) => count(sent[1]!, organization))).toEqual([6, 5, 5]);
    expect(sent.slice(2).every((batch) => count(batch, 'org-b') + count(batch, 'org-c') === 0)).toBe(true);
    for (const batch of sent.filter((each) => new Set(each.parts.map((part) => part.organization)).size === 3)) {
      for (const part of batch.parts) expect(count(batch, part.organization)).toBeLessThanOrEqual(Math.ceil(MODEL.batchSize / 3));
    }
    expect(finished.slice(0, 2).sort()).toEqual(['org-b', 'org-c']);
  });

  it('keeps the turns of organizations with long requests after each batch, so none jumps ahead (issue 40)', async () => {
    batches.length = 0;
    await Promise.all(['org-a', 'org-b', 'org-c'].map((organization) => embedder.embed(texts(organization, 60), { organization })));
    // The first batch is A's alone (the thread was idle); then all three share each batch, 6, 5
    // and 5 texts, the first in turn taking the slot left over and going last next time. An
    // organization forgotten after its batch would count as never served and lead every batch.
    const shared = documentBatches()
      .slice(1)
      .filter((batch) => new Set(batch.parts.map((part) => part.organization)).size === 3);
    expect(shared.length).toBeGreaterThanOrEqual(6);
    const leaders = shared.slice(0, 6).map((batch) => batch.parts[0]!.organization.slice(-1));
    const extras = shared.slice(0, 6).map((batch) => ['org-a', 'org-b', 'org-c'].find((organization) => count(batch, organization) === 6)!.slice(-1));
    expect(leaders.join('')).toBe('bcabca');
    expect(extras.join('')).toBe('bcabca');
  });

  it("answers the others of a batch whose caller went away, and sends none of the rest of that caller's texts", async () => {
    batches.length = 0;
    const before = embedder.stats()!;
    const held = embedder.embed(long('w', 16), { organization: 'org-w' });
    const gone = new AbortController();
    const xTexts = texts('x', 40);
    const abandoned = embedder.embed(xTexts, { organization: 'org-x', signal: gone.signal }).catch((error: unknown) => error);
    const yTexts = texts('y', 6);
    const kept = embedder.embed(yTexts, { organization: 'org-y' });
    // X's and Y's texts share the second batch; X's caller leaves while the model works on it.
    const mixed = await batchOf('org-x');
    expect([count(mixed, 'org-x'), count(mixed, 'org-y')]).toEqual([10, 6]);
    gone.abort(new Error('the caller gave up'));

    expect(await abandoned).toEqual(new Error('the caller gave up'));
    const answer = await kept;
    await held;
    for (const [index, text] of yTexts.entries()) {
      expect(largestDifference(answer.vectors[index]!, (await embedder.embed([text])).vectors[0]!)).toBeLessThan(1e-5);
    }
    const sentOfX = documentBatches().flatMap((batch) => batch.parts.filter((part) => part.organization === 'org-x').flatMap((part) => part.texts));
    expect(sentOfX).toEqual(mixed.parts.find((part) => part.organization === 'org-x')!.texts);
    expect(embedder.stats()).toMatchObject({ running: 0, waiting: 0, dropped: before.dropped + 1 });
  });

  it('fails every request of the batch its thread died in with 502, and serves the others on a new thread', async () => {
    batches.length = 0;
    const held = embedder.embed(long('w', 16), { organization: 'org-w' });
    // The thread dies once its current batch (W's) is done, in the next one: P's and Q's.
    embedder.crashThread();
    const lost = ['org-p', 'org-q'].map((organization) => embedder.embed(texts(organization, 8), { organization }).catch((error: unknown) => error));
    await batchOf('org-p');
    const later = embedder.embed(texts('r', 6), { organization: 'org-r' });

    expect((await held).vectors).toHaveLength(16);
    for (const error of await Promise.all(lost)) {
      expect(error).toBeInstanceOf(HttpError);
      expect(error).toMatchObject({ status: 502 });
    }
    expect((await later).vectors).toHaveLength(6);
    const withP = documentBatches().find((batch) => count(batch, 'org-p') > 0)!;
    expect([count(withP, 'org-p'), count(withP, 'org-q'), count(withP, 'org-r')]).toEqual([8, 8, 0]);
    expect(embedder.problem()).toBeNull();
  });

  it("keeps the queries' lane apart: one request a batch, answered while documents wait", async () => {
    batches.length = 0;
    const finished: string[] = [];
    const first = batchOf('org-d');
    const backlog = embedder.embed(long('d', 48), { organization: 'org-d' }).then(() => finished.push('documents'));
    await first;
    const queries = ['org-q1', 'org-q2', 'org-q3'].map((organization) => embedder.embed([`${organization} allotment budget`], { organization }).then(() => finished.push(organization)));
    queries.push(embedder.embed(texts('four', 4), { organization: 'org-q1' }).then(() => finished.push('four')));
    await Promise.all([backlog, ...queries]);
    expect(finished.at(-1)).toBe('documents');
    const querySent = batches.filter((batch) => batch.thread === 'embedder-queries');
    expect(querySent.map((batch) => batch.parts.map((part) => `${part.organization}:${part.texts.length}`))).toEqual([['org-q1:1'], ['org-q2:1'], ['org-q3:1'], ['org-q1:4']]);
    expect(documentBatches().every((batch) => batch.parts.every((part) => part.organization === 'org-d'))).toBe(true);
  });

  it('goes by the purpose the caller names: a small document is batched with others, a long query stays a query', async () => {
    batches.length = 0;
    const first = batchOf('org-busy');
    const backlog = embedder.embed(long('busy', 32), { organization: 'org-busy', purpose: 'document' });
    await first;
    // Two small documents of two texts each, and a query of six texts, sent while the documents' thread is busy.
    await Promise.all([
      backlog,
      embedder.embed(texts('small-1', 2), { organization: 'org-s1', purpose: 'document' }),
      embedder.embed(texts('small-2', 2), { organization: 'org-s2', purpose: 'document' }),
      embedder.embed(texts('question', 6), { organization: 'org-s3', purpose: 'query' }),
    ]);
    const querySent = batches.filter((batch) => batch.thread === 'embedder-queries');
    expect(querySent.map((batch) => batch.parts.map((part) => `${part.organization}:${part.texts.length}`))).toEqual([['org-s3:4'], ['org-s3:2']]);
    const small = documentBatches().filter((batch) => batch.parts.some((part) => part.organization.startsWith('org-s')));
    expect(small.some((batch) => batch.parts.some((part) => part.organization === 'org-s1') && batch.parts.some((part) => part.organization === 'org-s2'))).toBe(true);
  });
});

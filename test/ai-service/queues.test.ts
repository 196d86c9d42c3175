/**
 * The AI service's fair, bounded, cancellable queues (docs/ai-service.md "Queues"), through the
 * real service, its threads and the API's client. One extraction thread, so the order in which
 * documents finish is the order the queue chose; the tests wait on the service's own counters
 * (stats()), never on the clock.
 */
import { describe, expect, it } from 'vitest';
import { AiServiceError, createAiClient } from '../../src/ai-service/client.ts';
import type { AiService } from '../../src/ai-service/server.ts';
import { fixture, json, serve, settings } from './support.ts';

/** Valid HTML that takes a thread a few hundred milliseconds to read. */
const SLOW_HTML = Buffer.from(`<html><body>${'<p>Minutes of the <b>allotment</b> committee meeting</p>'.repeat(30_000)}</body></html>`);
/** A small page that still goes to a thread (every HTML page does). */
const PAGE = fixture('page.html');

/** Waits until the service's counters say so: a condition, not a duration (bounded so a bug fails). */
async function until(service: AiService, condition: (stats: ReturnType<AiService['stats']>) => boolean): Promise<void> {
  for (let tries = 0; tries < 3000; tries += 1) {
    if (condition(service.stats())) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the queues never got there: ${JSON.stringify(service.stats())}`);
}

describe('the extraction queue', async () => {
  const service = await serve({ extraction: { threads: 1, maxWaiting: 8, maxWaitingPerOrganization: 6 } });
  const client = createAiClient({ url: service.url });
  const extract = (organizationId: string | undefined, body: Uint8Array, signal?: AbortSignal) => client.extract(body, 'text/html; charset=utf-8', { organizationId, signal });

  it('serves B and C between the documents of A, which queued first', async () => {
    const finished: string[] = [];
    const send = (organization: string, body: Uint8Array) =>
      extract(organization, body).then((result) => {
        finished.push(organization);
        return result;
      });
    const calls = [send('org-a', SLOW_HTML)];
    await until(service, (stats) => stats.documents.running === 1);
    for (let index = 0; index < 5; index += 1) calls.push(send('org-a', PAGE));
    await until(service, (stats) => stats.documents.waiting === 5);
    calls.push(send('org-b', PAGE));
    await until(service, (stats) => stats.documents.waiting === 6);
    calls.push(send('org-c', PAGE));
    const results = await Promise.all(calls);
    expect(finished).toEqual(['org-a', 'org-b', 'org-c', 'org-a', 'org-a', 'org-a', 'org-a', 'org-a']);
    expect(results.slice(1).every((result) => result.text.includes('Garden club newsletter'))).toBe(true);
    // Answered requests are not callers that went away.
    expect(service.stats().documents).toEqual({ running: 0, waiting: 0, dropped: 0, refused: 0, threads: 0 });
  });

  it('answers 503 with Retry-After when full, per organization and in total, and serves the rest', async () => {
    const calls = [extract('org-a', SLOW_HTML)];
    await until(service, (stats) => stats.documents.running === 1);
    for (let index = 0; index < 6; index += 1) calls.push(extract('org-a', PAGE));
    await until(service, (stats) => stats.documents.waiting === 6);

    const refusedA = await extract('org-a', PAGE).catch((error: unknown) => error);
    expect(refusedA).toBeInstanceOf(AiServiceError);
    expect(refusedA).toMatchObject({ status: 503, retryable: true, retryAfterSeconds: 5 });

    calls.push(extract('org-b', PAGE), extract(undefined, PAGE));
    await until(service, (stats) => stats.documents.waiting === 8);
    const response = await fetch(`${service.url}/v1/extract`, { method: 'POST', headers: { 'content-type': 'text/html', 'x-organization-id': 'org-d' }, body: PAGE });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(await json(response)).toEqual({ error: { message: 'Too many documents are waiting to be read; try again in 5 s.', type: 'server_error' } });

    expect(await Promise.all(calls)).toHaveLength(9);
    expect((await extract('org-d', PAGE)).text).toContain('Garden club newsletter');
    expect(service.stats().documents).toMatchObject({ running: 0, waiting: 0, dropped: 0, refused: 2 });
  });

  it('drops a waiting document and terminates a running thread when their callers go away', async () => {
    const running = new AbortController();
    const waiting = new AbortController();
    const first = extract('org-a', SLOW_HTML, running.signal).catch((error: unknown) => error);
    await until(service, (stats) => stats.documents.threads === 1);
    const second = extract('org-a', PAGE, waiting.signal).catch((error: unknown) => error);
    await until(service, (stats) => stats.documents.waiting === 1);

    waiting.abort(new Error('the caller gave up'));
    expect(await second).toEqual(new Error('the caller gave up'));
    await until(service, (stats) => stats.documents.waiting === 0 && stats.documents.dropped === 1);
    expect(service.stats().documents).toMatchObject({ running: 1, threads: 1 });

    running.abort(new Error('the caller gave up'));
    expect(await first).toEqual(new Error('the caller gave up'));
    // The slow document's thread is gone before it could finish, and its slot is free.
    await until(service, (stats) => stats.documents.threads === 0 && stats.documents.running === 0);
    expect(service.stats().documents.dropped).toBe(2);
    expect((await extract('org-b', PAGE)).text).toContain('Garden club newsletter');
  });

  it('takes turns across organizations for OCR too, and drops a waiting image whose caller went away', async () => {
    const image = fixture('scan.png');
    const finished: string[] = [];
    const read = (organizationId: string, signal?: AbortSignal) =>
      client.extract(image, 'image/png', { organizationId, signal }).then((result) => {
        finished.push(organizationId);
        return result.text;
      });
    const calls = [read('org-a')];
    await until(service, (stats) => stats.images.running === 1);
    calls.push(read('org-a'), read('org-a'));
    await until(service, (stats) => stats.images.waiting === 2);
    const gone = new AbortController();
    const abandoned = read('org-c', gone.signal).catch((error: unknown) => error);
    calls.push(read('org-b'));
    await until(service, (stats) => stats.images.waiting === 4);
    gone.abort(new Error('the caller gave up'));
    expect(await abandoned).toEqual(new Error('the caller gave up'));
    expect(await Promise.all(calls)).toEqual(Array(4).fill('The quarterly revenue grew fourteen percent'));
    expect(finished).toEqual(['org-a', 'org-b', 'org-a', 'org-a']);
    expect(service.stats().images).toEqual({ running: 0, waiting: 0, dropped: 1, refused: 0 });
  });

  it('refuses a malformed X-Organization-Id with 400', async () => {
    const response = await fetch(`${service.url}/v1/extract`, { method: 'POST', headers: { 'content-type': 'text/html', 'x-organization-id': 'two words' }, body: PAGE });
    expect(response.status).toBe(400);
    expect((await json(response)).error.type).toBe('invalid_request_error');
  });

  it('refuses an X-Embedding-Purpose other than query or document with 400', async () => {
    const response = await fetch(`${service.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-embedding-purpose': 'search' },
      body: JSON.stringify({ input: ['a'] }),
    });
    expect(response.status).toBe(400);
    expect((await json(response)).error.message).toBe('X-Embedding-Purpose must be query or document.');
  });
});

describe('a document that runs out of time on the service', async () => {
  const service = await serve({ settings: settings({ extraction: { ...settings().extraction, timeoutMs: 1 } }) });

  it('is a permanent failure for the client: 422, not retryable', async () => {
    const error = await createAiClient({ url: service.url })
      .extract(SLOW_HTML, 'text/html')
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AiServiceError);
    expect(error).toMatchObject({ status: 422, retryable: false, retryAfterSeconds: null });
    expect((error as AiServiceError).message).toMatch(/^Reading the document took longer than/);
  });
});

describe('the embeddings queue', async () => {
  const service = await serve();
  const client = createAiClient({ url: service.url });

  it("answers B's one text before any of A's large requests, queued first, is done", async () => {
    const finished: string[] = [];
    // Four batches each (BATCH_SIZE 8), of texts long enough to take the model a moment.
    const large = (request: number) => Array.from({ length: 32 }, (_, index) => `Request ${request} text ${index}: ${'the committee discussed the allotment budget '.repeat(20)}`);
    const calls = [0, 1, 2].map((request) => client.embed(large(request), { organizationId: 'org-a' }).then(() => finished.push('org-a')));
    await until(service, (stats) => stats.embeddings!.running === 1 && stats.embeddings!.waiting === 2);
    calls.push(client.embed(['allotment budget'], { organizationId: 'org-b' }).then(() => finished.push('org-b')));
    await Promise.all(calls);
    expect(finished).toEqual(['org-b', 'org-a', 'org-a', 'org-a']);
  });

  it("serves a search's query before the batches of every organization waiting, not after a turn of each", async () => {
    const finished: string[] = [];
    // A's request of two batches (BATCH_SIZE 8) runs; B and C wait with one batch each. Taking
    // turns, D's query of one text would come after B's and C's batches; in the queries' line
    // (QUERY_TEXTS) it is answered after the batch in progress, first of all.
    const texts = (name: string, count: number) => Array.from({ length: count }, (_, index) => `${name} text ${index}: ${'the committee discussed the allotment budget '.repeat(20)}`);
    const calls = [
      ['org-a', 16],
      ['org-b', 8],
      ['org-c', 8],
    ].map(([organization, count]) => client.embed(texts(organization as string, count as number), { organizationId: organization as string }).then(() => finished.push(organization as string)));
    await until(service, (stats) => stats.embeddings!.running === 1 && stats.embeddings!.waiting === 2);
    calls.push(client.embed(['allotment budget'], { organizationId: 'org-d' }).then(() => finished.push('org-d')));
    await Promise.all(calls);
    expect(finished[0]).toBe('org-d');
  });

  it('stops batching a request whose caller went away', async () => {
    const controller = new AbortController();
    const texts = Array.from({ length: 64 }, (_, index) => `Abandoned text ${index}: ${'minutes of the meeting '.repeat(30)}`);
    const abandoned = client.embed(texts, { organizationId: 'org-a', signal: controller.signal }).catch((error: unknown) => error);
    await until(service, (stats) => stats.embeddings!.running === 1);
    controller.abort(new Error('the caller gave up'));
    expect(await abandoned).toEqual(new Error('the caller gave up'));
    await until(service, (stats) => stats.embeddings!.dropped === 1 && stats.embeddings!.running === 0 && stats.embeddings!.waiting === 0);
    expect((await client.embed(['still here'], { organizationId: 'org-b' })).vectors).toHaveLength(1);
  });
});

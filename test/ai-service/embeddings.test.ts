import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { AiServiceError, createAiClient, EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL } from '../../src/ai-service/client.ts';
import { json, post, serve, settings } from './support.ts';

const cosine = (a: number[], b: number[]) => a.reduce((sum, value, index) => sum + value * b[index]!, 0);
const norm = (vector: number[]) => Math.hypot(...vector);

describe('POST /v1/embeddings with the local provider (all-MiniLM-L6-v2)', async () => {
  const service = await serve();
  const url = `${service.url}/v1/embeddings`;

  it('answers in the OpenAI shape: 384 unit-length dimensions, in input order, with usage in model tokens', async () => {
    const { status, body } = await post(url, { input: ['Solar panels on the roof', 'Quarterly tax return'], model: 'anything' });
    expect(status).toBe(200);
    // [CLS] solar panels on the roof [SEP], [CLS] quarterly tax return [SEP]
    expect(body).toMatchObject({ object: 'list', model: LOCAL_EMBEDDING_MODEL, usage: { prompt_tokens: 12, total_tokens: 12 } });
    expect(LOCAL_EMBEDDING_MODEL).toBe('all-MiniLM-L6-v2');
    expect(body.data.map((item: { object: string; index: number }) => [item.object, item.index])).toEqual([
      ['embedding', 0],
      ['embedding', 1],
    ]);
    for (const { embedding } of body.data) {
      expect(embedding).toHaveLength(EMBEDDING_DIMENSIONS);
      expect(norm(embedding)).toBeCloseTo(1, 6);
    }
  });

  it('is deterministic across calls and takes a single string', async () => {
    const first = await post(url, { input: 'The board approved the budget.' });
    const second = await post(url, { input: ['unrelated text first', 'The board approved the budget.'] });
    expect(first.body.data[0].embedding).toEqual(second.body.data[1].embedding);
  });

  it('scores a paraphrase without a shared word above a text that shares words', async () => {
    const { body } = await post(url, {
      input: ['How do I reset my password?', 'Steps to recover access when you forgot your login credentials', 'My password manager syncs across devices, how do I export it?'],
    });
    const [query, paraphrase, sharesWords] = body.data.map((item: { embedding: number[] }) => item.embedding);
    expect(cosine(query, paraphrase)).toBeGreaterThan(cosine(query, sharesWords));
  });

  it('gives texts without words a finite unit vector rather than zeros or NaN', async () => {
    const { body } = await post(url, { input: ['!!!', '...', '¿?'] });
    for (const { embedding } of body.data) {
      expect(embedding.every(Number.isFinite)).toBe(true);
      expect(norm(embedding)).toBeCloseTo(1, 6);
    }
  });

  it('serves base64 (little-endian float32), which OpenAI SDKs ask for by default', async () => {
    const { body } = await post(url, { input: 'budget', encoding_format: 'base64' });
    const { body: floats } = await post(url, { input: 'budget' });
    const bytes = Buffer.from(body.data[0].embedding, 'base64');
    const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
    expect(decoded).toHaveLength(EMBEDDING_DIMENSIONS);
    decoded.forEach((value, index) => expect(value).toBeCloseTo(floats.data[0].embedding[index], 6));
  });

  it.each([
    { given: {}, want: "'input'" },
    { given: { input: [] }, want: '1 to 2048' },
    { given: { input: [1, 2, 3] }, want: 'token arrays' },
    { given: { input: ['ok', ''] }, want: "'input[1]'" },
    { given: { input: ['x'.repeat(8001)] }, want: "'input[0]'" },
    { given: { input: Array.from({ length: 2049 }, () => 'a') }, want: '1 to 2048' },
    { given: { input: 'a', dimensions: 1536 }, want: "'dimensions'" },
    { given: { input: 'a', encoding_format: 'int8' }, want: "'encoding_format'" },
    { given: { input: 'a', model: 5 }, want: "'model'" },
    { given: ['not', 'an', 'object'], want: 'JSON object' },
  ])("answers 400 in OpenAI's error shape for $given", async ({ given, want }) => {
    const { status, body } = await post(url, given);
    expect(status).toBe(400);
    expect(body).toEqual({ error: { message: expect.stringContaining(want), type: 'invalid_request_error' } });
  });

  it('answers 400 for a body that is not JSON and 413 over 2 MiB', async () => {
    const broken = await fetch(url, { method: 'POST', body: '{"input":' });
    expect(broken.status).toBe(400);
    const large = await fetch(url, { method: 'POST', body: JSON.stringify({ input: 'a'.repeat(3 * 1024 * 1024) }) });
    expect(large.status).toBe(413);
    expect((await json(large)).error.type).toBe('invalid_request_error');
  });

  it('is what the client reads', async () => {
    const client = createAiClient({ url: service.url });
    const { vectors, model } = await client.embed(['first text', 'second text']);
    expect(model).toBe(LOCAL_EMBEDDING_MODEL);
    expect(vectors.map((vector) => vector.length)).toEqual([EMBEDDING_DIMENSIONS, EMBEDDING_DIMENSIONS]);
    const refused = await client.embed([]).catch((caught: unknown) => caught);
    expect(refused).toMatchObject({ name: 'AiServiceError', retryable: false, status: 400, detail: expect.stringContaining('1 to 2048') });
  });
});

/** A stand-in for an OpenAI-compatible provider: records requests, answers with `reply`. */
async function fakeProvider(reply: (body: any) => { status: number; body: unknown }) {
  const requests: Array<{ path: string; authorization: string | undefined; body: any }> = [];
  const answer = async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    requests.push({ path: request.url ?? '', authorization: request.headers.authorization, body });
    const { status, body: answerBody } = reply(body);
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(answerBody));
  };
  // A request the fake cannot read (not JSON, cut off) gets a 500 the test sees, not an unhandled rejection.
  const server = createServer((request, response) => {
    answer(request, response).catch((error: unknown) => response.writeHead(500).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests };
}

const openAiAnswer = (body: { input: string[]; dimensions: number }, dimensions = body.dimensions) => ({
  status: 200,
  body: {
    object: 'list',
    // Out of order on purpose: `index` decides.
    data: body.input.map((_, index) => ({ object: 'embedding', index, embedding: Array.from({ length: dimensions }, () => index / 10) })).reverse(),
    model: 'text-embedding-3-small',
    usage: { prompt_tokens: 7, total_tokens: 7 },
  },
});

describe('POST /v1/embeddings with the openai provider', async () => {
  const provider = await fakeProvider((body) =>
    body.input.includes('fail') ? { status: 500, body: { error: { message: 'quota of org-123 exceeded' } } } : body.input.includes('short') ? openAiAnswer(body, 1536) : openAiAnswer(body),
  );
  const service = await serve({
    settings: settings({ provider: 'openai', openai: { baseUrl: provider.url, apiKey: 'sk-test-key', model: 'text-embedding-3-small' } }),
  });

  it('forwards the texts with the key, the model and 384 dimensions, and answers in input order', async () => {
    const { status, body } = await post(`${service.url}/v1/embeddings`, { input: ['alpha', 'beta'], model: 'ignored' });
    expect(status).toBe(200);
    expect(provider.requests.at(-1)).toEqual({
      path: '/v1/embeddings',
      authorization: 'Bearer sk-test-key',
      body: { input: ['alpha', 'beta'], model: 'text-embedding-3-small', dimensions: 384, encoding_format: 'float' },
    });
    expect(body.model).toBe('text-embedding-3-small');
    expect(body.usage).toEqual({ prompt_tokens: 7, total_tokens: 7 });
    expect(body.data.map((item: { index: number; embedding: number[] }) => [item.index, item.embedding[0]])).toEqual([
      [0, 0],
      [1, 0.1],
    ]);
  });

  it.each([
    { given: 'fail', why: 'a provider error' },
    { given: 'short', why: 'vectors of the wrong size' },
  ])('answers 502 with a generic message for $why, and the client reports it as retryable', async ({ given }) => {
    const { status, body } = await post(`${service.url}/v1/embeddings`, { input: [given] });
    expect(status).toBe(502);
    expect(body.error.type).toBe('server_error');
    expect(body.error.message).not.toMatch(/org-123|1536/);
    const error = await createAiClient({ url: service.url })
      .embed([given])
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AiServiceError);
    expect(error).toMatchObject({ retryable: true, status: 502, message: 'The AI service is unavailable, try again later.' });
  });

  it('answers 502 when the provider cannot be reached', async () => {
    const unreachable = await serve({
      settings: settings({ provider: 'openai', openai: { baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'sk-test-key', model: 'm' } }),
    });
    expect((await post(`${unreachable.url}/v1/embeddings`, { input: 'a' })).status).toBe(502);
  });

  it('answers 503 while OPENAI_API_KEY is missing', async () => {
    const unconfigured = await serve({ settings: settings({ provider: 'openai' }) });
    const { status, body } = await post(`${unconfigured.url}/v1/embeddings`, { input: 'a' });
    expect(status).toBe(503);
    expect(body.error.type).toBe('server_error');
  });

  it('lets the client talk to an OpenAI-compatible provider directly, with its key and model', async () => {
    const client = createAiClient({ url: provider.url.replace(/\/v1$/, ''), apiKey: 'sk-direct', model: 'text-embedding-3-small' });
    const { vectors, model } = await client.embed(['one', 'two']);
    expect(model).toBe('text-embedding-3-small');
    expect(vectors[1]![0]).toBe(0.1);
    expect(provider.requests.at(-1)).toMatchObject({ authorization: 'Bearer sk-direct', body: { model: 'text-embedding-3-small', dimensions: 384 } });
    // A provider that ignores `dimensions` is caught by the client too.
    const error = await client.embed(['short']).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'AiServiceError', retryable: true, detail: expect.stringContaining('1536 dimensions') });
  });
});

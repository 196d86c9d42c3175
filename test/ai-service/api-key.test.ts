// The companion is private: AI_HOST is loopback whatever HOST says, and with AI_API_KEY set every
// route but /health answers 401 without that key as a bearer token, before reading the body.
import { describe, expect, it } from 'vitest';
import { createAiClient, AiServiceError } from '../../src/ai-service/client.ts';
import { loadConfig } from '../../src/config.ts';
import { serve, settings } from './support.ts';

const KEY = 'test-key-5b6f0c2e9a';

describe('the AI service with AI_API_KEY', async () => {
  const service = await serve({ settings: settings({ apiKey: KEY }) });
  const call = (path: string, init: RequestInit = {}) => fetch(`${service.url}${path}`, init);
  const embedBody = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: ['hello'] }) };

  it('answers its health to anyone', async () => {
    expect((await call('/health')).status).toBe(200);
  });

  it.each([
    ['no authorization', {}],
    ['a wrong key', { authorization: 'Bearer not-the-key' }],
    ['the key as Basic', { authorization: `Basic ${KEY}` }],
    ['the key with a suffix', { authorization: `Bearer ${KEY}x` }],
  ])('refuses embeddings and extraction with %s: 401', async (_name, headers: Record<string, string>) => {
    const embeddings = await call('/v1/embeddings', { ...embedBody, headers: { ...embedBody.headers, ...headers } });
    expect(embeddings.status).toBe(401);
    expect(embeddings.headers.get('www-authenticate')).toBe('Bearer');
    expect(((await embeddings.json()) as { error: unknown }).error).toEqual({ message: expect.stringContaining('API key'), type: 'invalid_request_error' });
    const extract = await call('/v1/extract', { method: 'POST', headers: { 'content-type': 'text/plain', ...headers }, body: 'some text' });
    expect(extract.status).toBe(401);
  });

  it('refuses before reading a large body', async () => {
    const response = await call('/v1/extract', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: new Uint8Array(20 * 1024 * 1024) });
    expect(response.status).toBe(401);
  });

  it('serves the client that sends the key, and the client reports a wrong key as a refusal it cannot retry', async () => {
    const client = createAiClient({ url: service.url, apiKey: KEY });
    expect((await client.embed(['hello world'])).vectors[0]).toHaveLength(384);
    expect(await client.extract(new TextEncoder().encode('Plain words.'), 'text/plain')).toEqual({ text: 'Plain words.', pages: null, language: 'und' });
    const wrong = createAiClient({ url: service.url, apiKey: 'wrong' });
    const error = await wrong.embed(['hello']).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AiServiceError);
    expect(error).toMatchObject({ status: 401, retryable: false });
  });
});

describe('the AI service without a key', async () => {
  const service = await serve();
  it('answers without credentials (a deployment that sets no key, e.g. behind its own network rules)', async () => {
    const response = await fetch(`${service.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input: 'hi' }) });
    expect(response.status).toBe(200);
  });
});

describe('AI_HOST', () => {
  it.each([
    [{}, '127.0.0.1', 'http://127.0.0.1:3001'],
    [{ HOST: '0.0.0.0' }, '127.0.0.1', 'http://127.0.0.1:3001'],
    [{ HOST: '0.0.0.0', AI_HOST: '0.0.0.0', AI_PORT: '4100' }, '0.0.0.0', 'http://127.0.0.1:4100'],
    [{ AI_HOST: '::1' }, '::1', 'http://[::1]:3001'],
  ])('%o: listens on %s, reached at %s', (env, host, url) => {
    const { ai } = loadConfig(env);
    expect(ai.host).toBe(host);
    expect(ai.url).toBe(url);
  });
});

/**
 * documents.search against a hosted OpenAI-compatible provider (AI_URL pointed straight at a local
 * stand-in that speaks the embeddings protocol, as a deployment may point it at api.openai.com):
 * each search costs one AI credit, the last allowed search succeeds and the next is refused with
 * LIMIT_REACHED (kind aiCredits); a query the provider cannot embed answers 503 and costs nothing.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import { settablePlans } from '../concurrency/support.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { creditsSpent, tenant } from './support.ts';

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );

describe('search with a paid embedding provider', () => {
  let provider: Server;
  let server: TestServer;
  let broken = false;
  const seen: { authorization: string | undefined; body: any }[] = [];
  const { plans, limits } = settablePlans();

  beforeAll(async () => {
    provider = createServer((req, res) => {
      // A hosted provider has no companion health route (the worker asks for it at start).
      if (req.url !== '/v1/embeddings') {
        req.resume();
        res.writeHead(404).end();
        return;
      }
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        seen.push({ authorization: req.headers.authorization, body: JSON.parse(body) });
        if (broken) {
          res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"upstream exploded: key sk-secret"}}');
          return;
        }
        const embedding = Array.from({ length: 384 }, (_, i) => Math.sin(i));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding }], model: 'text-embedding-3-small', usage: { prompt_tokens: 3, total_tokens: 3 } }));
      });
    });
    provider.listen(0, '127.0.0.1');
    await once(provider, 'listening');
    server = await startTestServer({
      aiService: false,
      env: { AI_URL: `http://127.0.0.1:${(provider.address() as AddressInfo).port}`, AI_API_KEY: 'sk-test' },
      overrides: { plans },
    });
  });
  afterAll(async () => {
    await server?.close();
    provider?.close();
  });

  it('charges one credit per search, up to the limit and not past it', async () => {
    const t = await tenant(server);
    limits.set(t.org, { aiCredits: 2 });
    const first = await t.client.documents.search({ workspaceId: t.workspaceId, query: 'revenue' });
    expect(first).toEqual({ model: 'text-embedding-3-small', results: [] });
    expect(seen.at(-1)).toMatchObject({ authorization: 'Bearer sk-test', body: { input: ['revenue'] } });
    await t.client.documents.search({ workspaceId: t.workspaceId, query: 'revenue' }); // the last credit
    expect(await creditsSpent(server, t.org)).toBe(2);
    const refused = await failure(t.client.documents.search({ workspaceId: t.workspaceId, query: 'revenue' }));
    expect(refused).toMatchObject({ status: 403, code: 'LIMIT_REACHED', data: { kind: 'aiCredits', limit: 2, plan: 'free' } });
    expect(await creditsSpent(server, t.org)).toBe(2);
  });

  it('a query the provider cannot embed answers 503 with the generic message, costs nothing, and logs the detail', async () => {
    const t = await tenant(server);
    broken = true;
    try {
      const error = await failure(t.client.documents.search({ workspaceId: t.workspaceId, query: 'revenue' }));
      expect(error).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', message: 'The AI service is unavailable, try again later.' });
      expect(JSON.stringify(error)).not.toContain('sk-secret');
      expect(await creditsSpent(server, t.org)).toBe(0);
    } finally {
      broken = false;
    }
  });
});

import { once } from 'node:events';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { AiServiceError, createAiClient, LOCAL_EMBEDDING_MODEL } from '../../src/ai-service/client.ts';
import { version } from '../../src/version.ts';
import { closedPort } from '../support/ports.ts';
import { startAiService } from '../../src/ai-service/server.ts';
import { json, logger, serve, settings } from './support.ts';

describe('GET /health', () => {
  it('reports ok with the local provider and the OCR engine', async () => {
    const service = await serve();
    const response = await fetch(`${service.url}/health`);
    expect(response.status).toBe(200);
    expect(await json(response)).toEqual({
      ok: true,
      version,
      provider: 'local',
      model: LOCAL_EMBEDDING_MODEL,
      ocr: expect.stringMatching(/^tesseract\.js \d+\.\d+\.\d+ \(eng\)$/),
      problems: [],
    });
  });

  it('reports ok false, still with 200, when the openai provider has no key', async () => {
    const service = await serve({ settings: settings({ provider: 'openai' }) });
    const response = await fetch(`${service.url}/health`);
    expect(response.status).toBe(200);
    const body = await json(response);
    expect(body).toMatchObject({ ok: false, provider: 'openai' });
    expect(body.problems).toEqual([expect.stringContaining('OPENAI_API_KEY')]);
  });

  it('answers 404 for unknown paths and 405 with Allow for wrong methods', async () => {
    const service = await serve();
    const missing = await fetch(`${service.url}/v2/anything`);
    expect(missing.status).toBe(404);
    expect(await json(missing)).toEqual({ error: { message: expect.any(String), type: 'invalid_request_error' } });
    const wrong = await fetch(`${service.url}/v1/embeddings`);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect((await json(wrong)).error.type).toBe('invalid_request_error');
  });
});

describe('client.health', () => {
  it('returns the report and the latency', async () => {
    const service = await serve();
    const report = await createAiClient({ url: `${service.url}/` }).health();
    expect(report).toMatchObject({ ok: true, version, provider: 'local', problems: [] });
    expect(report.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('fails retryably on a closed port, with the network detail kept apart from the message', async () => {
    const port = await closedPort();
    const error = await createAiClient({ url: `http://127.0.0.1:${port}` })
      .health()
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AiServiceError);
    expect(error).toMatchObject({ retryable: true, status: null, message: 'The AI service is unavailable, try again later.' });
    expect((error as AiServiceError).detail).toContain('ECONNREFUSED');
  });

  it("fails retryably when the answer does not come in time, and passes the caller's own abort through", async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket)); // accepts connections, never answers
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    try {
      const timedOut = await createAiClient({ url })
        .health({ timeoutMs: 100 })
        .catch((caught: unknown) => caught);
      expect(timedOut).toMatchObject({ name: 'AiServiceError', retryable: true, detail: expect.stringContaining('within 100 ms') });
      const controller = new AbortController();
      const aborted = createAiClient({ url })
        .health({ signal: controller.signal })
        .catch((caught: unknown) => caught);
      controller.abort(new Error('shutting down'));
      expect(await aborted).toEqual(new Error('shutting down'));
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});

describe('close', () => {
  it('answers a request still running on a keep-alive connection, with Connection: close, and does not wait for the client to hang up', async () => {
    const service = await startAiService({ settings: settings(), host: '127.0.0.1', port: 0, logger });
    // A client that never closes an idle keep-alive connection by itself (Node's Agent has no idle
    // timeout): close() would wait for it forever if the answer kept the connection open.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const body = JSON.stringify({ input: ['a first text to embed', 'and a second one'], model: LOCAL_EMBEDDING_MODEL });
      const sent = httpRequest(`${service.url}/v1/embeddings`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
      sent.end(body);
      const answered = once(sent, 'response') as Promise<[IncomingMessage]>;
      // The request is queued or running (the model loads first), then the service closes.
      await expect.poll(() => service.stats().embeddings!.running + service.stats().embeddings!.waiting).toBeGreaterThan(0);
      const closed = service.close();
      const [response] = await answered;
      response.resume();
      expect(response.statusCode).toBe(200);
      expect(response.headers.connection).toBe('close');
      await closed;
    } finally {
      agent.destroy();
    }
  });
});

/**
 * The AI service's spans (issue 41; docs/ai-service.md "Traces"), as an exporter sends them: the
 * tests' OTLP/HTTP receiver (test/support/otlp-receiver.ts) decodes what the Node SDK (started here
 * as the AI process starts it) exports, and the requests carry a traceparent made up here. The
 * tests wait for spans to arrive and for the service's counters, never on the clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAiService, type AiService } from '../../src/ai-service/server.ts';
import { startTracing, type Tracing } from '../../src/telemetry/tracing.ts';
import { descendantsOf, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { fixture, logger, settings } from './support.ts';

/** OTLP's numbering (opentelemetry-proto, trace.proto). */
const SPAN_KIND_SERVER = 2;
const STATUS_CODE_ERROR = 2;

/** The caller's span: a made-up trace id and parent span id per test, sampled. */
const caller = (n: number) => ({ traceId: `4bf92f3577b34da6a3ce929d0e0e${String(n).padStart(4, '0')}`, spanId: `00f067aa0ba9${String(n).padStart(4, '0')}` });
const traceparent = (n: number) => `00-${caller(n).traceId}-${caller(n).spanId}-01`;

/** Valid HTML that takes a thread a few hundred milliseconds to read (as in queues.test.ts). */
const SLOW_HTML = Buffer.from(`<html><body>${'<p>Minutes of the <b>allotment</b> committee meeting</p>'.repeat(30_000)}</body></html>`);
/** Texts for the model, each one a secret no span may hold. */
const textsOf = (who: string) => Array.from({ length: 6 }, (_, index) => `${who} confidential memo number ${index} about the harbour lease`);

describe('the AI service traces', () => {
  let receiver: OtlpReceiver;
  let tracing: Tracing | null;
  let service: AiService;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    // The SDK reads the standard variables from process.env when it starts; they are put back at once.
    const variables = { ...receiver.env, OTEL_TRACES_EXPORTER: 'otlp', OTEL_METRICS_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none' };
    const before = Object.fromEntries(Object.keys(variables).map((name) => [name, process.env[name]]));
    Object.assign(process.env, variables);
    try {
      tracing = await startTracing('workspace-api-ai', process.env);
    } finally {
      for (const [name, value] of Object.entries(before)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(tracing).not.toBeNull();
    // One extraction thread and one waiting document per payer: a second document waits, a third is refused.
    service = await startAiService({ settings: settings(), host: '127.0.0.1', port: 0, logger, extraction: { threads: 1, maxWaitingPerOrganization: 1 } });
  });

  afterAll(async () => {
    await service?.close();
    // Exports the rest and unregisters the SDK: the next file in this worker process starts without it.
    await tracing?.shutdown();
    await receiver?.close();
  });

  /** The spans of the caller's trace `n` once `ready` holds for them (exported, so ended); bounded so a bug fails. */
  async function traceOf(n: number, ready: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
    const ofTrace = (spans: ReceivedSpan[]) => spans.filter((span) => span.traceId === caller(n).traceId);
    await tracing!.flush();
    try {
      return ofTrace(await receiver.until((spans) => ready(ofTrace(spans))));
    } catch (error) {
      throw new Error(`trace ${n} never came (${(error as Error).message})`, { cause: error });
    }
  }

  const serverSpan = (spans: ReceivedSpan[]) => spans.find((span) => span.kind === SPAN_KIND_SERVER);
  const hasServerSpan = (spans: ReceivedSpan[]) => serverSpan(spans) !== undefined;

  /** The spans under `root` (any depth) named `name`. */
  const descendants = (spans: ReceivedSpan[], root: ReceivedSpan, name: string) => descendantsOf(spans, root).filter((span) => span.name === name);

  /** No attribute (of a span or of its events) holds any of `secrets`. */
  function expectNoneHolds(spans: ReceivedSpan[], secrets: string[]): void {
    const values = spans.flatMap((span) => [...Object.values(span.attributes), ...span.events.flatMap((event) => Object.values(event.attributes)), span.status.message ?? '']).map(String);
    for (const secret of secrets) expect(values.filter((value) => value.includes(secret))).toEqual([]);
  }

  const post = (path: string, n: number, body: Uint8Array | string, headers: Record<string, string>, signal?: AbortSignal) =>
    fetch(`${service.url}${path}`, { method: 'POST', headers: { traceparent: traceparent(n), 'x-payer-id': 'payer-1', 'x-organization-id': 'org-1', ...headers }, body, signal });

  it('continues the caller trace: a SERVER span per request, named by its route, with its turn and status', async () => {
    const response = await post('/v1/extract', 1, fixture('report.pdf'), { 'content-type': 'application/pdf' });
    expect(response.status).toBe(200);
    const { text } = (await response.json()) as { text: string };
    const spans = await traceOf(1, (found) => hasServerSpan(found) && found.some((span) => span.name === 'ai.extract.thread'));
    const server = serverSpan(spans)!;
    expect(server).toMatchObject({ name: 'POST /v1/extract', traceId: caller(1).traceId, parentSpanId: caller(1).spanId });
    expect(server.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/v1/extract', 'http.response.status_code': 200, 'payer.id': 'payer-1', 'organization.id': 'org-1' });
    expect(server.status.code).not.toBe(STATUS_CODE_ERROR);

    // The queue wait and the extraction thread's run, under the request's span.
    const [wait] = descendants(spans, server, 'ai.queue.wait');
    expect(wait?.attributes).toMatchObject({ 'ai.queue': 'documents', 'ai.queue.outcome': 'started' });
    const [thread] = descendants(spans, server, 'ai.extract.thread');
    expect(thread?.attributes).toMatchObject({
      'ai.document.type': 'application/pdf',
      'ai.document.bytes': fixture('report.pdf').byteLength,
      'ai.document.pages': 2,
      'ai.document.characters': text.length,
    });
    expect(thread?.events.map((event) => event.name)).toContain('reading');
    expectNoneHolds(spans, [text, ...text.split(/\s*\n\s*/).filter((line: string) => line.length >= 12)]);
  });

  it('gives each request of the embedding batches spans of its own, linked to the requests that shared a batch', async () => {
    const texts = { 2: textsOf('Alder'), 3: textsOf('Birch') };
    const responses = await Promise.all(
      ([2, 3] as const).map((n) => post('/v1/embeddings', n, JSON.stringify({ input: texts[n] }), { 'content-type': 'application/json', 'x-embedding-purpose': 'document', 'x-payer-id': `payer-${n}` })),
    );
    expect(responses.map((response) => response.status)).toEqual([200, 200]);
    const traces = await Promise.all(([2, 3] as const).map((n) => traceOf(n, (found) => hasServerSpan(found) && found.some((span) => span.name === 'ai.embed.batch'))));
    const servers = traces.map((spans) => serverSpan(spans)!);
    traces.forEach((spans, at) => {
      const n = at + 2;
      const server = servers[at]!;
      expect(server).toMatchObject({ name: 'POST /v1/embeddings', parentSpanId: caller(n).spanId });
      expect(server.attributes).toMatchObject({ 'payer.id': `payer-${n}`, 'ai.embedding.purpose': 'document', 'http.response.status_code': 200 });
      expect(descendants(spans, server, 'ai.queue.wait').map((span) => span.attributes)).toMatchObject([{ 'ai.queue': 'embeddings', 'ai.queue.outcome': 'started' }]);
      // Every text of the request went through one of its batches.
      const batches = descendants(spans, server, 'ai.embed.batch');
      expect(batches.reduce((sum, batch) => sum + Number(batch.attributes['ai.embed.texts']), 0)).toBe(6);
      for (const batch of batches) {
        expect(batch.attributes).toMatchObject({ 'ai.embed.thread': 'embedder', 'ai.embed.tokens': expect.any(Number), 'ai.embed.batch.tokens': expect.any(Number) });
        // A batch shared with the other request links to that request's span.
        const other = servers[1 - at]!;
        const shared = traces[1 - at]!.some((span) => span.name === 'ai.embed.batch' && span.attributes['ai.embed.batch'] === batch.attributes['ai.embed.batch']);
        expect(batch.links.some((link) => link.spanId === other.spanId)).toBe(shared);
        expect(batch.attributes['ai.embed.batch.requests']).toBe(shared ? 2 : 1);
      }
      expectNoneHolds(spans, [...texts[2], ...texts[3]]);
    });
  });

  it('spans an OCR run with its image count', async () => {
    const response = await post('/v1/extract', 4, fixture('scan.png'), { 'content-type': 'image/png' });
    expect(response.status).toBe(200);
    const { text } = (await response.json()) as { text: string };
    const spans = await traceOf(4, (found) => hasServerSpan(found) && found.some((span) => span.name === 'ai.ocr'));
    const server = serverSpan(spans)!;
    expect(descendants(spans, server, 'ai.queue.wait').map((span) => span.attributes['ai.queue'])).toEqual(['images']);
    const [ocr] = descendants(spans, server, 'ai.ocr');
    expect(ocr?.attributes).toMatchObject({ 'ai.ocr.images': 1, 'ai.document.pages': 1, 'ai.document.bytes': fixture('scan.png').byteLength });
    expect(text.length).toBeGreaterThan(10);
    expectNoneHolds(spans, [text]);
  });

  it('marks a caller that went away without an error, and a refusal of a full queue as one', async () => {
    // The first document holds the one thread; the second of the same payer waits; a third is refused.
    const running = post('/v1/extract', 5, SLOW_HTML, { 'content-type': 'text/html' });
    await until(() => service.stats().documents.running === 1);
    const gone = new AbortController();
    const abandoned = post('/v1/extract', 6, fixture('page.html'), { 'content-type': 'text/html' }, gone.signal).catch((error: unknown) => error);
    await until(() => service.stats().documents.waiting === 1);
    const refused = await post('/v1/extract', 7, fixture('page.html'), { 'content-type': 'text/html' });
    expect(refused.status).toBe(503);
    gone.abort();
    expect(await abandoned).toMatchObject({ name: 'AbortError' });
    expect((await running).status).toBe(200);

    const left = await traceOf(6, (found) => found.some((span) => span.attributes['ai.caller_gone'] === true && span.kind === SPAN_KIND_SERVER));
    const server = serverSpan(left)!;
    expect(server.status.code).not.toBe(STATUS_CODE_ERROR);
    expect(server.events.map((event) => event.name)).toContain('caller went away');
    expect(descendants(left, server, 'ai.queue.wait').map((span) => [span.attributes['ai.queue.outcome'], span.status.code === STATUS_CODE_ERROR])).toEqual([['dropped', false]]);

    const full = serverSpan(await traceOf(7, hasServerSpan))!;
    expect(full.attributes['http.response.status_code']).toBe(503);
    expect(full.status.code).toBe(STATUS_CODE_ERROR);
  });

  it('names the health report by its route', async () => {
    expect((await fetch(`${service.url}/health`, { headers: { traceparent: traceparent(8) } })).status).toBe(200);
    expect(serverSpan(await traceOf(8, hasServerSpan))).toMatchObject({ name: 'GET /health', parentSpanId: caller(8).spanId, attributes: { 'http.route': '/health' } });
  });
});

/** Waits until `condition` holds (the service's counters): a condition, not a duration, bounded so a bug fails. */
async function until(condition: () => boolean): Promise<void> {
  for (let tries = 0; tries < 3000; tries += 1) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the service never got there');
}

/**
 * A job in the traces (issue 41): jobs.create records the creating span's context in the job; its
 * run in the worker is a span of a new trace linked to that span, and a retry links to the first
 * attempt as well; the run's AI calls are CLIENT spans under it whose `traceparent` reaches the AI
 * service; the worker records the jobs' queue wait and run time as histograms on /metrics.
 *
 * Everything runs in this process: an OTLP/HTTP receiver (JSON), the SDK (startTracing), the test
 * server with its worker, and a stand-in AI service that reads the headers it gets and fails the
 * first embedding of a text that asks for it.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDING_DIMENSIONS } from '../../src/ai-service/client.ts';
import { startTracing, tracer, type Tracing } from '../../src/telemetry/tracing.ts';
import { tenant, waitForJob, type Tenant } from '../jobs/support.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

// --- An OTLP/HTTP receiver (test/support/otlp-receiver.ts) ---------------------------------------

/** OTLP's SpanKind (opentelemetry-proto trace.proto): 3 CLIENT, 5 CONSUMER; Status.code 2 ERROR. */
const CLIENT = 3;
const CONSUMER = 5;
const ERROR = 2;

/** Every span the exporter sent, flattened; and every body as it came (`raw`): nothing in it may hold a job's text. */
let receiver: OtlpReceiver;

/** Waits for the spans received until `find` answers something (the exporter sends in batches). */
async function received<T>(find: (all: ReceivedSpan[]) => T | undefined, what: string): Promise<T> {
  let found: T | undefined;
  try {
    await receiver.until((all) => (found = find(all)) !== undefined);
  } catch (error) {
    throw new Error(`not received: ${what} (${(error as Error).message})`, { cause: error });
  }
  return found!;
}

// --- A stand-in AI service ---------------------------------------------------------------------

/** What each embedding request came with. */
const embeddings: { headers: IncomingHttpHeaders; texts: string[] }[] = [];
const failedOnce = new Set<string>();
const FAIL_FIRST = 'fail the first embedding of this text';

const ai: Server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const { input } = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { input?: string[] };
    const texts = input ?? [];
    embeddings.push({ headers: request.headers, texts });
    if (texts.includes(FAIL_FIRST) && !failedOnce.has(FAIL_FIRST)) {
      failedOnce.add(FAIL_FIRST);
      response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'stand-in failure' } }));
      return;
    }
    const data = texts.map((_, index) => ({ index, embedding: Array.from({ length: EMBEDDING_DIMENSIONS }, (_, i) => (i === index ? 1 : 0)) }));
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data, model: 'stand-in' }));
  });
});

// --- The service, traced -------------------------------------------------------------------------

const saved = new Map<string, string | undefined>();

let tracing: Tracing | null = null;
let server: TestServer;
let t: Tenant;

const listen = async (http: Server) => {
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  const aiUrl = await listen(ai);
  // The SDK reads these from process.env itself (restored in afterAll: this worker runs other files next).
  const variables = { ...receiver.env, OTEL_TRACES_EXPORTER: 'otlp' };
  for (const name of [...Object.keys(variables), 'OTEL_METRICS_EXPORTER', 'OTEL_LOGS_EXPORTER']) saved.set(name, process.env[name]);
  Object.assign(process.env, variables);
  tracing = await startTracing('job-trace-test');
  expect(tracing).not.toBeNull();
  server = await startTestServer({ aiService: false, env: { AI_URL: aiUrl }, overrides: { queue: { retryDelaySeconds: 1, pollingSeconds: 0.5 } } });
  t = await tenant(server);
});

afterAll(async () => {
  await server?.close();
  await tracing?.shutdown();
  // Whatever the SDK's shutdown leaves registered, nothing of it may reach the next file.
  trace.disable();
  context.disable();
  propagation.disable();
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  ai.close();
  await receiver?.close();
});

/** A text.embed job created inside a span standing for the request that creates it (as jobs.create's would be). */
async function createInRequest(texts: string[]): Promise<{ jobId: string; request: { traceId: string; spanId: string } }> {
  return tracer.startActiveSpan('test.request', async (span) => {
    try {
      const job = await server.services.jobs.create(
        { organizationId: t.org, workspaceId: null, documentId: null, kind: 'text.embed', input: { texts }, createdBy: null, retryOf: null, credits: 0 },
        { now: new Date(), plan: null },
      );
      const { traceId, spanId } = span.spanContext();
      return { jobId: job.id, request: { traceId, spanId } };
    } finally {
      span.end();
    }
  });
}

const runsOf = (jobId: string) => (all: ReceivedSpan[]) => all.filter((span) => span.name === 'job.run text.embed' && span.attributes['job.id'] === jobId);

describe('a job in the traces', () => {
  it('runs in a new trace linked to the span that created it; its AI call is a child whose traceparent reaches the AI service', async () => {
    const text = 'a text that must stay out of every span';
    const { jobId, request } = await createInRequest([text]);
    expect(await waitForJob(t, jobId)).toMatchObject({ status: 'succeeded', attempt: 1 });

    const [run] = await received((all) => (runsOf(jobId)(all).length === 1 ? runsOf(jobId)(all) : undefined), 'the job.run span');
    expect(run!.kind).toBe(CONSUMER);
    expect(run!.traceId).not.toBe(request.traceId);
    expect(run!.parentSpanId).toBeUndefined();
    expect(run!.links).toEqual([{ traceId: request.traceId, spanId: request.spanId, attributes: { 'job.link': 'created_by' } }]);
    expect(run!.attributes).toMatchObject({ 'job.id': jobId, 'job.kind': 'text.embed', 'job.attempt': 1, 'organization.id': t.org, 'job.continued': false });
    expect(run!.status.code).not.toBe(ERROR);

    const call = await received((all) => all.find((span) => span.name === 'ai.embed' && span.parentSpanId === run!.spanId), 'the ai.embed span under job.run');
    expect(call.kind).toBe(CLIENT);
    expect(call.traceId).toBe(run!.traceId);
    expect(call.attributes).toMatchObject({ 'ai.texts': 1, 'ai.purpose': 'document', 'http.response.status_code': 200, 'organization.id': t.org });

    const got = embeddings.find((embedding) => embedding.texts.includes(text));
    expect(got?.headers.traceparent).toBe(`00-${call.traceId}-${call.spanId}-01`);

    // Neither the job's text nor a trace field reaches anyone else: the exporter, the job's clients.
    expect(receiver.raw.some((body) => body.includes(text))).toBe(false);
    expect(Object.keys(await t.client.jobs.get({ id: jobId })).filter((key) => /trace/i.test(key))).toEqual([]);
  });

  it('a retried attempt is a trace of its own, linked to the request and to the first attempt', async () => {
    const { jobId, request } = await createInRequest([FAIL_FIRST]);
    expect(await waitForJob(t, jobId)).toMatchObject({ status: 'succeeded', attempt: 2 });

    const runs = await received((all) => (runsOf(jobId)(all).length === 2 ? runsOf(jobId)(all) : undefined), 'two job.run spans');
    const first = runs.find((run) => run.attributes['job.attempt'] === 1)!;
    const second = runs.find((run) => run.attributes['job.attempt'] === 2)!;
    // The first failed (its message only), and was retried.
    // Its type only (tracing.ts failed): a message may quote what the run failed on.
    expect(first.status).toMatchObject({ code: ERROR, message: 'AiServiceError' });
    expect(first.links).toEqual([{ traceId: request.traceId, spanId: request.spanId, attributes: { 'job.link': 'created_by' } }]);
    expect(second.status.code).not.toBe(ERROR);
    expect(new Set([first.traceId, second.traceId, request.traceId]).size).toBe(3);
    expect(second.links).toEqual([
      { traceId: request.traceId, spanId: request.spanId, attributes: { 'job.link': 'created_by' } },
      { traceId: first.traceId, spanId: first.spanId, attributes: { 'job.link': 'first_run' } },
    ]);
    // Each attempt's AI call is its own child, the failed one marked so.
    const calls = await received((all) => {
      const found = all.filter((span) => span.name === 'ai.embed' && (span.parentSpanId === first.spanId || span.parentSpanId === second.spanId));
      return found.length === 2 ? found : undefined;
    }, 'an ai.embed span under each attempt');
    expect(calls.find((call) => call.parentSpanId === first.spanId)).toMatchObject({ status: { code: ERROR }, attributes: { 'http.response.status_code': 500 } });
    expect(calls.find((call) => call.parentSpanId === second.spanId)?.attributes['http.response.status_code']).toBe(200);
    // The first attempt is where the job's row says.
    const [row] = await server.db.sql<{ trace: { traceparent: string } }[]>`select first_run_trace as trace from jobs where id = ${jobId}`;
    expect(row!.trace.traceparent).toBe(`00-${first.traceId}-${first.spanId}-01`);
  });

  it("the scrape has the jobs' queue wait and run time by kind and organization", async () => {
    const response = await server.fetch('/metrics');
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('# TYPE workspace_api_job_queue_wait_seconds histogram');
    expect(text).toContain('# TYPE workspace_api_job_run_seconds histogram');
    const count = (name: string) => Number(new RegExp(`^${name}_count\\{kind="text.embed",organization="${t.org}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    // Three runs: the first job's, and the retried job's two attempts.
    expect(count('workspace_api_job_queue_wait_seconds')).toBe(3);
    expect(count('workspace_api_job_run_seconds')).toBe(3);
  });
});

/**
 * One trace across the walkthrough's document path (issue 41; docs/observability.md): a document
 * uploaded, completed, indexed by a job and searched, with tracing exporting to a receiver of
 * OTLP/HTTP inside the test (test/support/otlp-receiver.ts). The test server, its worker and the
 * AI service run in this process, so one SDK exports them all. Checked:
 *
 * - every request has a span named by its operation, and its `traceresponse` names that span;
 * - the job's run is a trace of its own, linked to the request that created it;
 * - the AI service's spans (its request, the extraction, the embedding batches) are descendants
 *   of the worker's run;
 * - nothing exported holds the session token, the password, the upload's signature or the
 *   document's text;
 * - the log lines written on that path carry the trace and span ids.
 *
 * Runs on the embedded database (`make test`) and on PostgreSQL (`make test-pg`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing, type Tracing } from '../../src/telemetry/tracing.ts';
import { tenant, waitForJob, type Tenant } from '../jobs/support.ts';
import { descendantsOf, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { TEST_PASSWORD } from '../support/users.ts';

const SECRET_SENTENCE = 'The heron ledger of Quillmoor balances seventeen silver reeds.';
const TEXT = `${SECRET_SENTENCE}\n\n${'Ordinary words about rivers and mills fill this paragraph. '.repeat(20)}`;

describe('one trace across upload, complete, the index job, the AI service and search', () => {
  let receiver: OtlpReceiver;
  let tracing: Tracing | null;
  let server: TestServer;
  let t: Tenant;
  const saved = { ...process.env };

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    Object.assign(process.env, receiver.env);
    tracing = await startTracing('workspace-api-test');
    server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
    t = await tenant(server);
  });
  afterAll(async () => {
    await server?.close();
    await tracing?.shutdown();
    await receiver?.close();
    for (const key of Object.keys(receiver?.env ?? {})) if (!(key in saved)) delete process.env[key];
  });

  it('links the job to its request, nests the AI service under the worker, and exports no secret', async () => {
    expect(tracing).not.toBeNull();
    const { document, upload } = await t.client.documents.createUpload({ organizationId: t.org, workspaceId: t.workspaceId, name: 'heron.txt', contentType: 'text/plain', size: Buffer.byteLength(TEXT) });
    expect((await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: TEXT })).status).toBe(200);
    await t.client.documents.complete({ id: document.id });

    const created = await fetch(`${server.origin}/api/v1/jobs`, {
      method: 'POST',
      headers: { ...t.owner.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ organizationId: t.org, kind: 'document.index', documentId: document.id }),
    });
    expect(created.status).toBe(200);
    const job = (await created.json()) as { id: string };
    const traceresponse = created.headers.get('traceresponse');
    expect(traceresponse).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    const [, requestTraceId, requestSpanId] = traceresponse!.split('-');
    expect(await waitForJob(t, job.id)).toMatchObject({ status: 'succeeded' });
    const { results } = await t.client.documents.search({ workspaceId: t.workspaceId, query: 'heron ledger silver reeds', limit: 3 });
    expect(results.length).toBeGreaterThan(0);

    const isRun = (span: ReceivedSpan) => span.name.startsWith('job.run') && span.attributes['job.id'] === job.id;
    const spans = await receiver.until((all) => all.some(isRun) && all.some((span) => span.name === 'documents.search'));

    // The request that created the job: its span, named by its operation, is the one traceresponse names.
    const request = spans.find((span) => span.spanId === requestSpanId)!;
    expect(request).toMatchObject({ name: 'jobs.create', traceId: requestTraceId });
    expect(request.attributes).toMatchObject({ 'http.response.status_code': 200, 'app.organization.id': t.org });
    for (const name of ['documents.createUpload', 'documents.complete', 'documents.search'])
      expect(
        spans.some((span) => span.name === name),
        name,
      ).toBe(true);
    expect(spans.some((span) => span.name.includes('/api/v1/'))).toBe(false);

    // The job's run: a trace of its own, linked to the request's.
    const run = spans.find(isRun)!;
    expect(run.traceId).not.toBe(request.traceId);
    expect(run.links.some((link) => link.traceId === request.traceId)).toBe(true);

    // The AI service's spans are the run's descendants: its request span, the extraction, the embeddings.
    const below = descendantsOf(spans, run);
    const aiServer = below.filter((span) => span.kind === 2 /* SERVER */);
    expect(aiServer.map((span) => span.name)).toEqual(expect.arrayContaining(['POST /v1/extract', 'POST /v1/embeddings']));
    const underAi = aiServer.flatMap((span) => descendantsOf(spans, span)).map((span) => span.name);
    expect(underAi.some((name) => /extract/i.test(name))).toBe(true);
    expect(underAi.some((name) => /batch/i.test(name))).toBe(true);

    // The search's query embedding is the search request's descendant.
    const search = spans.find((span) => span.name === 'documents.search')!;
    expect(descendantsOf(spans, search).map((span) => span.name)).toEqual(expect.arrayContaining(['ai.embed', 'POST /v1/embeddings', 'db.transaction']));

    // Nothing exported holds a secret or the document's text.
    const exported = receiver.raw.join('\n');
    const signature = new URL(upload.url).searchParams.toString();
    for (const secret of [t.owner.token, TEST_PASSWORD, SECRET_SENTENCE, 'Quillmoor', ...(signature ? [signature] : [])]) expect(exported.includes(secret), secret.slice(0, 20)).toBe(false);

    // The log lines of the path carry the trace ids: the worker's run, and the request's.
    const runLines = server.logs.filter((line) => line.jobId === job.id);
    expect(runLines.length).toBeGreaterThan(0);
    for (const line of runLines) expect(line).toMatchObject({ trace_id: run.traceId, span_id: expect.stringMatching(/^[0-9a-f]{16}$/) });
    const requestLines = server.logs.filter((line) => line.trace_id === request.traceId);
    expect(requestLines.length).toBeGreaterThan(0);
  });
});

/**
 * The AI service unreachable (AI_URL on a closed port): a job is retried twice with backoff, then
 * fails with a readable message (the provider detail only in the log); documents.search answers
 * 503 with the generic message. jobs.retry of the failed job queues a new one that names it,
 * charges again and writes the audit entry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import { closedPort } from '../support/ports.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { creditsSpent, tenant, waitForJob, type Tenant } from './support.ts';

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );

describe('the AI service is down', () => {
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => {
    server = await startTestServer({
      aiService: false,
      env: { AI_URL: `http://127.0.0.1:${await closedPort()}` },
      overrides: { queue: { retryDelaySeconds: 1, pollingSeconds: 0.5 } },
    });
    t = await tenant(server);
  });
  afterAll(() => server?.close());

  it('a job runs three times (two retries with backoff), then fails with a readable message', async () => {
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['hello'] } });
    const failed = await waitForJob(t, job.id, ['failed', 'succeeded']);
    expect(failed).toMatchObject({ status: 'failed', attempt: 3, error: { message: 'The AI service is unavailable, try again later.' }, input: { texts: ['hello'] } });
    expect(failed).not.toHaveProperty('result');
    const runs = server.logs.filter((line) => line.msg === 'job run failed' && line.jobId === job.id);
    expect(runs.map((line) => line.finalAttempt)).toEqual([false, false, true]);
    expect(await creditsSpent(server, t.org)).toBe(1);

    const retried = await t.client.jobs.retry({ id: job.id });
    expect(retried).toMatchObject({ kind: 'text.embed', retryOf: job.id, credits: 1, attempt: 0, createdBy: t.owner.id });
    expect(retried.id).not.toBe(job.id);
    expect(await creditsSpent(server, t.org)).toBe(2);
    const [audit] = await server.db.sql`select action, actor_id, target_type, target_id, metadata from audit_log where organization_id = ${t.org} and action = 'job.retry'`;
    expect(audit).toMatchObject({ action: 'job.retry', actor_id: t.owner.id, target_type: 'job', target_id: job.id, metadata: { newJobId: retried.id } });
    const settled = await waitForJob(t, retried.id, ['failed', 'succeeded']);
    expect(settled.input).toEqual({ texts: ['hello'], retryOf: job.id });
  });

  it('documents.search answers 503 SERVICE_UNAVAILABLE with the generic message', async () => {
    const error = await failure(t.client.documents.search({ workspaceId: t.workspaceId, query: 'revenue' }));
    expect(error).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', message: 'The AI service is unavailable, try again later.' });
    expect(server.logs.some((line) => line.msg === 'search query could not be embedded')).toBe(true);
  });
});

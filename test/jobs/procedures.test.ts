/**
 * jobs.create, get, list, cancel and retry against the real server, its inline worker (pg-boss on
 * the embedded database) and the companion AI service: happy paths, the declared errors, the
 * credits each move charges or refunds, and `input`/`result` shown only once a job is finished.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import type { TestServer } from '../support/server.ts';
import { settablePlans } from '../concurrency/support.ts';
import { creditsSpent, startTenantServer, tenant, uploadDocument, waitForJob, type Tenant } from './support.ts';

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );
const texts = ['Quarterly revenue grew 14%.', 'Churn fell to 2.1%.'];

describe('with a worker', () => {
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => ({ server, t } = await startTenantServer()));
  afterAll(() => server?.close());

  it('text.embed: queued without input, then succeeded with one 384-number vector per text; 1 credit', async () => {
    const created = await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts } });
    expect(created).toMatchObject({ kind: 'text.embed', organizationId: t.org, workspaceId: null, documentId: null, credits: 1, retryOf: null, createdBy: t.owner.id, error: null });
    expect(created.status === 'queued' || created.status === 'running').toBe(true);
    expect(created).not.toHaveProperty('input');
    expect(created).not.toHaveProperty('result');
    const done = await waitForJob(t, created.id);
    expect(done.status).toBe('succeeded');
    expect(done.input).toEqual({ texts });
    const result = done.result as { model: string; vectors: number[][] };
    expect(result.vectors).toHaveLength(2);
    expect(result.vectors[0]).toHaveLength(384);
    expect(done.attempt).toBe(1);
    expect(done.startedAt).toBeInstanceOf(Date);
    expect(done.finishedAt).toBeInstanceOf(Date);
    expect(await creditsSpent(server, t.org)).toBe(1);
  });

  it('document.extract of a ready document stores its text; documents.text answers it', async () => {
    const document = await uploadDocument(t, 'notes.txt', 'text/plain', Buffer.from('Hello from the notes.\nSecond line.'));
    expect(await t.client.documents.text({ id: document.id })).toBeNull();
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.extract', documentId: document.id });
    expect(job).toMatchObject({ workspaceId: t.workspaceId, documentId: document.id, credits: 1 });
    const done = await waitForJob(t, job.id);
    expect(done).toMatchObject({ status: 'succeeded', input: {}, result: { characters: 34, pages: null } });
    expect(await t.client.documents.text({ id: document.id })).toEqual({ text: 'Hello from the notes.\nSecond line.', characters: 34, pages: null });
    const after = await t.client.documents.get({ id: document.id });
    expect(after.extracted).toMatchObject({ characters: 34, pages: null });
    expect(after.extracted!.at).toBeInstanceOf(Date);
  });

  it("document jobs need a ready document of the organization: 412 while pending, 404 for another organization's or none", async () => {
    const { document } = await t.client.documents.createUpload({ organizationId: t.org, workspaceId: t.workspaceId, name: 'later.txt', contentType: 'text/plain', size: 5 });
    const pending = await failure(t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id }));
    expect(pending).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED' });
    const other = await tenant(server);
    const theirs = await uploadDocument(other, 'theirs.txt', 'text/plain', Buffer.from('theirs'));
    const foreign = await failure(t.client.jobs.create({ organizationId: t.org, kind: 'document.extract', documentId: theirs.id }));
    expect(foreign).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    const missing = await failure(t.client.jobs.create({ organizationId: t.org, kind: 'document.extract', documentId: `doc_${'a'.repeat(24)}` }));
    expect(missing).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    // Nothing was charged for the refusals.
    expect(await creditsSpent(server, other.org)).toBe(0);
  });

  it('jobs.cancel answers 409 for a job that is not queued, and jobs.retry for one that is not failed', async () => {
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['x'] } });
    await waitForJob(t, job.id);
    expect(await failure(t.client.jobs.cancel({ id: job.id }))).toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(await failure(t.client.jobs.retry({ id: job.id }))).toMatchObject({ status: 409, code: 'CONFLICT' });
  });

  it('jobs.list: newest first, filters, cursor pages, result only with includeResult, a foreign cursor is 400', async () => {
    const own = await tenant(server);
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await own.client.jobs.create({ organizationId: own.org, kind: 'text.embed', input: { texts: [`text ${i}`] } }));
    for (const job of created) await waitForJob(own, job.id);
    const first = await own.client.jobs.list({ organizationId: own.org, limit: 2 });
    expect(first.items.map((job) => job.id)).toEqual([created[4]!.id, created[3]!.id]);
    expect(first.items[0]).not.toHaveProperty('result');
    expect(first.items[0]!.input).toEqual({ texts: ['text 4'] });
    const rest = [];
    let cursor = first.nextCursor;
    while (cursor) {
      const page = await own.client.jobs.list({ organizationId: own.org, limit: 2, cursor });
      rest.push(...page.items);
      cursor = page.nextCursor;
    }
    expect(rest.map((job) => job.id)).toEqual([created[2]!.id, created[1]!.id, created[0]!.id]);
    const withResult = await own.client.jobs.list({ organizationId: own.org, limit: 1, includeResult: true });
    expect((withResult.items[0]!.result as { vectors: number[][] }).vectors).toHaveLength(1);
    expect((await own.client.jobs.list({ organizationId: own.org, status: 'failed' })).items).toEqual([]);
    expect((await own.client.jobs.list({ organizationId: own.org, status: 'succeeded' })).items).toHaveLength(5);
    expect((await own.client.jobs.list({ organizationId: own.org, workspaceId: own.workspaceId })).items).toEqual([]);
    const foreign = await failure(t.client.jobs.list({ organizationId: t.org, cursor: first.nextCursor! }));
    expect(foreign).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
  });
});

describe('without a worker (WORKER=off): jobs stay queued', () => {
  // One server for both tests (no AI call is made while nothing runs the jobs): each test has an
  // organization of its own, and the plan lookup gives only the one that needs it a limit.
  const { plans, limits } = settablePlans();
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => ({ server, t } = await startTenantServer({ aiService: false, env: { WORKER: 'off', AI_URL: 'http://127.0.0.1:9' }, overrides: { plans } })));
  afterAll(() => server?.close());

  it('jobs.cancel refunds the credits; a second cancel answers 409', async () => {
    const document = await uploadDocument(t, 'a.txt', 'text/plain', Buffer.from('some text'));
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id });
    expect(job.status).toBe('queued');
    expect(await creditsSpent(server, t.org)).toBe(2);
    const canceled = await t.client.jobs.cancel({ id: job.id });
    expect(canceled).toMatchObject({ id: job.id, status: 'canceled', input: {}, credits: 2 });
    expect(canceled.finishedAt).toBeInstanceOf(Date);
    expect(await creditsSpent(server, t.org)).toBe(0);
    expect(await failure(t.client.jobs.cancel({ id: job.id }))).toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(await creditsSpent(server, t.org)).toBe(0);
  });

  it("charges past a plan's AI credits are refused with LIMIT_REACHED at the boundary, and a cancel frees them again", async () => {
    const l = await tenant(server);
    limits.set(l.org, { workspaces: 3, members: 5, aiCredits: 3, storageBytes: 1 << 30 });
    const embed = () => l.client.jobs.create({ organizationId: l.org, kind: 'text.embed', input: { texts: ['x'] } });
    await embed();
    await embed();
    const last = await embed(); // the third credit: allowed
    const refused = await failure(embed());
    expect(refused).toMatchObject({ status: 403, code: 'LIMIT_REACHED', data: { kind: 'aiCredits', limit: 3, plan: 'free' } });
    expect(await creditsSpent(server, l.org)).toBe(3);
    expect((await l.client.jobs.list({ organizationId: l.org })).items).toHaveLength(3);
    await l.client.jobs.cancel({ id: last.id });
    await embed();
    expect(await creditsSpent(server, l.org)).toBe(3);
  });
});

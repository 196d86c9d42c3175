/**
 * The whole pipeline on real files, on the embedded defaults: upload a PDF, a DOCX and a PNG with
 * text, index them (document.index extracts first), and find each one's sentences with
 * documents.search, the right chunk first. Also: re-indexing an unchanged text keeps its chunks, search
 * stays inside its workspace, local-provider searches cost no credit, the per-user search limit.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import { LOCAL_EMBEDDING_MODEL } from '../../src/ai-service/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { creditsSpent, tenant, uploadDocument, waitForJob, type Tenant } from './support.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/${name}`, import.meta.url));
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );

describe('upload, index, search', () => {
  let server: TestServer;
  let t: Tenant;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
    const files = [
      ['report.pdf', 'application/pdf'],
      ['memo.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
      ['scan.png', 'image/png'],
    ] as const;
    for (const [name, contentType] of files) {
      const document = await uploadDocument(t, name, contentType, fixture(name));
      const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id });
      ids[name] = document.id;
      ids[`${name} job`] = job.id;
    }
    for (const [name] of files) expect(await waitForJob(t, ids[`${name} job`]!, undefined, 120_000)).toMatchObject({ status: 'succeeded' });
  }, 180_000);
  afterAll(() => server?.close());

  it('indexing extracted each document (pages for the PDF) and stored its chunks', async () => {
    const report = await t.client.documents.get({ id: ids['report.pdf']! });
    expect(report.extracted).toMatchObject({ pages: 2 });
    expect(report.chunkCount).toBeGreaterThan(0);
    expect(report.indexedAt).toBeInstanceOf(Date);
    expect((await t.client.documents.text({ id: ids['report.pdf']! }))!.text).toContain('The solar array produced 310 megawatt hours.');
    expect((await t.client.documents.text({ id: ids['memo.docx']! }))!.text).toContain('The office moves to Harbour Street in March.');
    expect((await t.client.documents.text({ id: ids['scan.png']! }))!.text.toLowerCase()).toContain('quarterly revenue');
    const job = await t.client.jobs.get({ id: ids['report.pdf job']! });
    expect(job.result).toMatchObject({ chunks: report.chunkCount });
    expect(await creditsSpent(server, t.org)).toBe(6); // three document.index jobs, two credits each
  });

  it.each([
    ['solar array megawatt hours', 'report.pdf', 'solar array'],
    ['office moves to Harbour Street', 'memo.docx', 'Harbour Street'],
    ['quarterly revenue grew', 'scan.png', 'revenue'],
  ])('"%s" finds %s first', async (query, name, words) => {
    const answer = await t.client.documents.search({ workspaceId: t.workspaceId, query, limit: 3 });
    expect(answer.model).toBe(LOCAL_EMBEDDING_MODEL);
    expect(answer.results[0]).toMatchObject({ documentId: ids[name], documentName: name });
    expect(answer.results[0]!.text.toLowerCase()).toContain(words.toLowerCase());
    const scores = answer.results.map((hit) => hit.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    // The local provider: searches cost nothing.
    expect(await creditsSpent(server, t.org)).toBe(6);
  });

  it('re-indexing an unchanged text keeps the chunks as they are; another workspace sees none of them', async () => {
    // The text did not change, so neither embeddings nor rows are made again (test/documents/citations*.test.ts).
    const before = await server.db.sql`select id from document_chunks where document_id = ${ids['memo.docx']!} order by id`;
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: ids['memo.docx']! });
    expect(await waitForJob(t, job.id)).toMatchObject({ status: 'succeeded' });
    const after = await server.db.sql`select id from document_chunks where document_id = ${ids['memo.docx']!} order by id`;
    expect(before.length).toBeGreaterThan(0);
    expect(after).toEqual(before);
    const elsewhere = await t.client.workspaces.create({ organizationId: t.org, name: 'Empty', slug: 'empty-search' });
    expect(await t.client.documents.search({ workspaceId: elsewhere.id, query: 'Harbour Street' })).toEqual({ model: LOCAL_EMBEDDING_MODEL, results: [] });
  });

  it('answers at most `limit` results, and 404 for a workspace that does not exist', async () => {
    expect((await t.client.documents.search({ workspaceId: t.workspaceId, query: 'the', limit: 1 })).results).toHaveLength(1);
    const missing = await failure(t.client.documents.search({ workspaceId: `ws_${'a'.repeat(24)}`, query: 'x' }));
    expect(missing.status).toBe(404);
  });

  it('allows 30 searches a minute per user, then 429 with the search message', async () => {
    const other = await tenant(server);
    for (let i = 0; i < 30; i++) await other.client.documents.search({ workspaceId: other.workspaceId, query: `q${i}` });
    const refused = await failure(other.client.documents.search({ workspaceId: other.workspaceId, query: 'one more' }));
    expect(refused).toMatchObject({ status: 429, code: 'TOO_MANY_REQUESTS', message: 'Too many searches, try again in a minute.' });
  });
});

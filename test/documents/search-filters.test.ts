/**
 * documents.search's filters apply inside both rankings, before fusion: with 150 decoy chunks
 * nearer the query than anything else by both meaning (their vector is the query's) and words
 * (short chunks of the query's words), a filtered search still answers `limit` matching hits.
 * A filter applied after fusion would find none: the decoys fill both rankings' 100 places.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import { vectorLiteral } from '../../src/documents/text-store.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tenant, uploadDocument, waitForJob, type Tenant } from '../jobs/support.ts';

const QUERY = 'office lease';
const DECOYS = 150;
const PASSAGES = [
  'The tenant signed a lease agreement for office space near the harbour.',
  'Our office lease in Lisbon runs until the end of next year, with an option to renew.',
  'The landlord agreed to repaint the rented office before the lease starts.',
];

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );

describe('documents.search filters inside the ranking', () => {
  let server: TestServer;
  let t: Tenant;
  let decoyId: string;
  let decoyCreatedAt: Date;
  const matching: string[] = [];
  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
    const decoy = await uploadDocument(t, 'decoys.md', 'text/markdown', new TextEncoder().encode('# Decoys\n'));
    decoyId = decoy.id;
    decoyCreatedAt = new Date(decoy.createdAt);
    const vector = vectorLiteral((await server.services.ai.embed([QUERY])).vectors[0]!);
    await server.db.sql`
      insert into document_chunks (id, organization_id, workspace_id, document_id, index, text, model, embedding)
      select 'chk_decoy' || lpad(i::text, 19, '0'), ${t.org}, ${t.workspaceId}, ${decoyId}, i,
             'office lease office lease office lease ' || i, ${(await server.services.ai.embed([QUERY])).model}, ${vector}::vector
      from generate_series(0, ${DECOYS - 1}) as i`;
    const jobs: string[] = [];
    for (const [index, text] of PASSAGES.entries()) {
      const document = await uploadDocument(t, `lease-${index}.txt`, 'text/plain', new TextEncoder().encode(text));
      matching.push(document.id);
      jobs.push((await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id })).id);
    }
    for (const job of jobs) expect(await waitForJob(t, job, undefined, 120_000)).toMatchObject({ status: 'succeeded' });
  }, 180_000);
  afterAll(() => server?.close());

  const search = (filters?: Parameters<Tenant['client']['documents']['search']>[0]['filters'], limit = PASSAGES.length) =>
    t.client.documents.search({ workspaceId: t.workspaceId, query: QUERY, limit, ...(filters ? { filters } : {}) });

  it('without filters the decoys take every place (the premise of the cases below)', async () => {
    const { results } = await search(undefined, 50);
    expect(results).toHaveLength(50);
    expect(new Set(results.map((hit) => hit.documentId))).toEqual(new Set([decoyId]));
  });

  it.each([
    ['documentIds', () => ({ documentIds: matching })],
    ['contentTypes', () => ({ contentTypes: ['text/plain' as const] })],
    ['createdAfter', () => ({ createdAfter: new Date(decoyCreatedAt.getTime() + 1) })],
    [
      'every filter at once',
      () => ({
        documentIds: [...matching, decoyId],
        contentTypes: ['text/plain' as const, 'application/pdf' as const],
        createdAfter: new Date(decoyCreatedAt.getTime() + 1),
        createdBefore: new Date(Date.now() + 60_000),
      }),
    ],
  ])('%s: answers `limit` matching hits among nearer non-matching chunks', async (_name, filters) => {
    const { results } = await search(filters());
    expect(results).toHaveLength(PASSAGES.length);
    expect(new Set(results.map((hit) => hit.documentId))).toEqual(new Set(matching));
  });

  it('createdBefore keeps the older decoys and leaves the newer documents out', async () => {
    const { results } = await search({ createdBefore: new Date(decoyCreatedAt.getTime() + 1) }, 50);
    expect(results).toHaveLength(50);
    expect(new Set(results.map((hit) => hit.documentId))).toEqual(new Set([decoyId]));
  });

  it('answers no hits when no document matches, and only the matching ones when fewer than `limit` do', async () => {
    expect((await search({ contentTypes: ['application/pdf'] })).results).toEqual([]);
    expect((await search({ createdAfter: new Date(Date.now() + 60_000) })).results).toEqual([]);
    const { results } = await search({ documentIds: [matching[0]!] }, 10);
    expect(results.map((hit) => hit.documentId)).toEqual([matching[0]]);
  });

  it('answers 400 for malformed filters, naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ documentIds: [] }, 'documentIds'],
      [{ documentIds: ['not-a-document-id'] }, 'documentIds'],
      [{ documentIds: Array.from({ length: 101 }, () => matching[0]) }, 'documentIds'],
      [{ contentTypes: ['image/gif'] }, 'contentTypes'],
      [{ createdAfter: 'yesterday' }, 'createdAfter'],
      [{ workspaceId: t.workspaceId }, 'filters'],
    ];
    for (const [filters, field] of cases) {
      const error = await failure(search(filters as never));
      expect(error, JSON.stringify(filters)).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
      expect(JSON.stringify((error.data as { issues: unknown }).issues), JSON.stringify(filters)).toContain(field);
    }
  });
});

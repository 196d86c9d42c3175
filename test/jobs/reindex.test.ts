/**
 * After an embedding model change: documents indexed by another model are invisible to search,
 * counted by admin.system.status, and re-indexed by jobs the worker queues itself, free of charge.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import { LOCAL_EMBEDDING_MODEL } from '../../src/ai-service/client.ts';
import { queueReindexing } from '../../src/jobs/reindex.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { createUser } from '../support/users.ts';
import { creditsSpent, tenant, uploadDocument, waitForJob, type Tenant } from './support.ts';

describe('re-indexing after a model change', () => {
  let server: TestServer;
  let t: Tenant;
  let documentId: string;
  let status: () => Promise<{ ai: { model: string | null; staleDocuments: number | null } }>;
  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
    const document = await uploadDocument(t, 'fleet.txt', 'text/plain', new TextEncoder().encode('Automobiles need their engine oil changed every ten thousand kilometres.'));
    documentId = document.id;
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId });
    expect(await waitForJob(t, job.id)).toMatchObject({ status: 'succeeded' });
    const admin = await createUser(server.db, { role: 'admin' });
    const client = createClient({ baseUrl: server.origin, token: admin.token, fetch: clientFetch(server) });
    status = () => client.admin.system.status({});
  }, 120_000);
  afterAll(() => server?.close());

  it('leaves out the chunks of a retired model, reports them stale, and re-indexes them for free', { timeout: 120_000 }, async () => {
    const search = () => t.client.documents.search({ workspaceId: t.workspaceId, query: 'car maintenance' });
    expect((await search()).results).toHaveLength(1);
    expect((await status()).ai).toMatchObject({ model: LOCAL_EMBEDDING_MODEL, staleDocuments: 0 });

    // As if the document had been indexed by the model used before this one.
    await server.db.sql`update document_chunks set model = 'retired-model' where document_id = ${documentId}`;
    expect((await search()).results).toEqual([]);
    expect((await status()).ai.staleDocuments).toBe(1);
    const spent = await creditsSpent(server, t.org);

    const deps = { sql: server.db.sql, jobs: server.services.jobs, ai: server.services.ai, logger: server.services.logger, now: () => new Date() };
    expect(await queueReindexing(deps)).toEqual({ model: LOCAL_EMBEDDING_MODEL, queued: 1 });
    // A second run while the job is pending queues nothing more.
    expect(await queueReindexing(deps)).toEqual({ model: LOCAL_EMBEDDING_MODEL, queued: 0 });
    const { items } = await t.client.jobs.list({ organizationId: t.org });
    const reindex = items.find((job) => job.documentId === documentId && job.createdBy === null);
    expect(reindex).toMatchObject({ credits: 0, createdBy: null });
    await waitForJob(t, reindex!.id);

    expect(await server.db.sql`select distinct model from document_chunks where document_id = ${documentId}`).toEqual([{ model: LOCAL_EMBEDDING_MODEL }]);
    expect((await search()).results).toHaveLength(1);
    expect((await status()).ai.staleDocuments).toBe(0);
    expect(await creditsSpent(server, t.org)).toBe(spent);
  });
});

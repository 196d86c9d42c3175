/**
 * The scheduled housekeeping: abandoned uploads (documents still pending an hour after their
 * upload address expired) go with their bytes, fresh ones and ready ones stay; job events older
 * than the retention window are pruned. Run directly, with the clock moved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHousekeeping } from '../../src/jobs/housekeeping.ts';
import type { TestServer } from '../support/server.ts';
import { startTenantServer, uploadDocument, type Tenant } from './support.ts';

describe('housekeeping', () => {
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => ({ server, t } = await startTenantServer({ env: { WORKER: 'off' } })));
  afterAll(() => server?.close());

  const run = (at: Date) => runHousekeeping({ sql: server.db.sql, storage: server.services.storage, jobs: server.services.jobs, ai: server.services.ai, logger: server.services.logger, now: () => at });

  it('deletes documents pending an hour past their upload address, and their bytes; keeps the rest', async () => {
    const ready = await uploadDocument(t, 'kept.txt', 'text/plain', Buffer.from('kept'));
    // Pending, with its bytes already PUT (never completed).
    const { document: abandoned, upload } = await t.client.documents.createUpload({ organizationId: t.org, workspaceId: t.workspaceId, name: 'left.txt', contentType: 'text/plain', size: 4 });
    expect((await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: 'left' })).status).toBe(200);
    const createdAt = abandoned.createdAt.getTime();

    // 15 minutes (the address) plus an hour, less a second: still kept.
    expect((await run(new Date(createdAt + 75 * 60_000 - 1000))).abandonedUploads).toBe(0);
    const outcome = await run(new Date(createdAt + 75 * 60_000 + 1000));
    expect(outcome).toMatchObject({ abandonedUploads: 1, objectsFailed: 0 });
    const rows = await server.db.sql`select id from documents where organization_id = ${t.org}`;
    expect(rows.map((row) => row.id)).toEqual([ready.id]);
    // The staged bytes are gone: committing them now finds nothing.
    expect(await server.services.storage.commitUpload(`${t.org}/${abandoned.id}`)).toBeNull();
    expect(await server.services.storage.stat(`${t.org}/${ready.id}`)).toEqual({ size: 4 });
  });

  it('prunes job events older than 24 hours', async () => {
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'text.embed', input: { texts: ['x'] } });
    const count = async () => (await server.db.sql`select count(*)::int as n from job_events where job_id = ${job.id}`)[0]!.n;
    expect(await count()).toBe(1);
    expect((await run(new Date(Date.now() + 23 * 3600_000))).eventsPruned).toBe(0);
    expect((await run(new Date(Date.now() + 25 * 3600_000))).eventsPruned).toBeGreaterThanOrEqual(1);
    expect(await count()).toBe(0);
  });
});

/**
 * The scheduled housekeeping: abandoned uploads (documents still pending an hour after their
 * upload address expired) go with their bytes, fresh ones and ready ones stay; job events older
 * than the retention window are pruned; on the embedded database, which has no autovacuum, the
 * tables past autovacuum's thresholds are vacuumed and analysed. Run directly, with the clock moved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPEN_GATE } from '../../src/db/request-gate.ts';
import { replaceChunks, type StoredChunk } from '../../src/documents/text-store.ts';
import { textHash } from '../../src/jobs/embed-chunks.ts';
import { runHousekeeping } from '../../src/jobs/housekeeping.ts';
import type { TestServer } from '../support/server.ts';
import { startTenantServer, uploadDocument, type Tenant } from './support.ts';

describe('housekeeping', () => {
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => ({ server, t } = await startTenantServer({ env: { WORKER: 'off' } })));
  afterAll(() => server?.close());

  const deps = (at = new Date()) => ({ sql: server.db.sql, storage: server.services.storage, jobs: server.services.jobs, ai: server.services.ai, logger: server.services.logger, now: () => at });
  const run = (at: Date) => runHousekeeping(deps(at));

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

  it("vacuums and analyses the tables past autovacuum's thresholds when asked to (the embedded database), and no others", async () => {
    const { sql } = server.db;
    await sql`insert into feature_flags (key) select 'churn-' || n from generate_series(1, 500) n`;
    await sql`delete from feature_flags where key like 'churn-%'`;
    const stats = async () =>
      (
        await sql<{ dead: number; vacuums: number }[]>`
        select n_dead_tup::int as dead, (vacuum_count + autovacuum_count)::int as vacuums from pg_stat_user_tables where relname = 'feature_flags'`
      )[0]!;
    // A server publishes a backend's counts within a second of its commit.
    await expect.poll(async () => (await stats()).dead, { timeout: 10_000 }).toBeGreaterThanOrEqual(500);
    const before = (await stats()).vacuums;

    // Without `vacuum` (a database server, where autovacuum runs): nothing is vacuumed.
    expect((await run(new Date())).tablesMaintained).toEqual([]);
    const outcome = await runHousekeeping({ ...deps(), vacuum: { requests: OPEN_GATE } });
    expect(outcome.tablesMaintained).toContainEqual({ table: 'public.feature_flags', action: 'vacuum', ms: expect.any(Number) });
    await expect.poll(async () => (await stats()).vacuums, { timeout: 10_000 }).toBeGreaterThan(before);
    expect((await stats()).dead).toBe(0);
    // A table with nothing to do is left alone: the next pass does not name it again.
    const again = await runHousekeeping({ ...deps(), vacuum: { requests: OPEN_GATE } });
    expect(again.tablesMaintained.map(({ table }) => table)).not.toContain('public.feature_flags');
  });

  it('vacuums the chunks (HNSW) without index cleanup, and not again for the same dead rows', async () => {
    const { sql } = server.db;
    const document = await uploadDocument(t, 'churn.txt', 'text/plain', Buffer.from('churn'));
    const chunks = (name: string): StoredChunk[] =>
      Array.from({ length: 300 }, (_, i) => {
        const text = `${name} ${i}`;
        return { text, embedding: Array.from({ length: 384 }, (_, d) => (d === i % 384 ? 1 : 0)), start: 0, end: text.length, firstPage: null, lastPage: null, headingPath: null, textHash: textHash(text) };
      });
    // Indexed twice: the second run deletes the first run's 300 rows.
    await replaceChunks(sql, document, 'churn-model', chunks('first'), new Date());
    await replaceChunks(sql, document, 'churn-model', chunks('second'), new Date());
    const dead = async () => (await sql<{ dead: number }[]>`select n_dead_tup::int as dead from pg_stat_user_tables where relname = 'document_chunks'`)[0]!.dead;
    await expect.poll(dead, { timeout: 10_000 }).toBeGreaterThanOrEqual(300);

    const first = await runHousekeeping({ ...deps(), vacuum: { requests: OPEN_GATE } });
    expect(first.tablesMaintained).toContainEqual({ table: 'public.document_chunks', action: 'vacuum-heap', ms: expect.any(Number) });
    // Its rows stay counted as dead (their index entries are still there): the next pass leaves the table alone.
    const next = await runHousekeeping({ ...deps(), vacuum: { requests: OPEN_GATE } });
    expect(next.tablesMaintained.map(({ table }) => table)).not.toContain('public.document_chunks');
  });
});

/**
 * Background migrations (jobs/background-migrations.ts): the workers' batched backfills. The one this
 * release ships, `chunk-text-hashes`, fills the text hash of chunks stored before sql/0013 as the
 * indexing code computes it; batches go on from their cursor slice after slice, and
 * admin.system.status reports their progress. On a server, a batch another worker holds is left to it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import { textHash } from '../../src/jobs/embed-chunks.ts';
import { listBackgroundMigrations } from '../../src/jobs/background-migrations-store.ts';
import { pendingBackgroundMigrations, runSlice } from '../../src/jobs/background-migrations.ts';
import { externalDatabaseUrl, openSecondClient } from '../support/database.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { createUser } from '../support/users.ts';
import { tenant, uploadDocument, waitForJob, type Tenant } from './support.ts';

const NAME = 'chunk-text-hashes';

describe('background migrations', () => {
  let server: TestServer;
  let t: Tenant;
  let documentId: string;
  const slice = (sliceMs: number) => runSlice(NAME, { sql: server.db.sql, logger: server.services.logger, now: () => new Date(), sliceMs });

  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
    const document = await uploadDocument(t, 'notes.txt', 'text/plain', new TextEncoder().encode('Backfills run in batches. Each batch is a short transaction.'));
    documentId = document.id;
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId });
    expect(await waitForJob(t, job.id)).toMatchObject({ status: 'succeeded' });
  }, 120_000);
  afterAll(() => server?.close());

  it('runs at the worker start and shows in admin.system.status', async () => {
    const admin = await createUser(server.db, { role: 'admin' });
    const client = createClient({ baseUrl: server.origin, token: admin.token, fetch: clientFetch(server) });
    await expect
      .poll(async () => (await client.admin.system.status({})).database.backgroundMigrations, { timeout: 20_000 })
      .toEqual([expect.objectContaining({ name: NAME, state: 'succeeded', lastError: null, finishedAt: expect.any(Date) })]);
  });

  it('fills the hashes chunks from before 0013 lack, as indexing computes them, slice after slice from its cursor', async () => {
    const { sql } = server.db;
    // 300 more chunks of the document, and text outside ASCII: the hash is of the UTF-8 bytes.
    await sql`
      insert into document_chunks (id, organization_id, workspace_id, document_id, index, text, embedding, model, generation, search_config)
      select 'bm-' || lpad(n::text, 4, '0'), organization_id, workspace_id, document_id, 1000 + n,
             case when n = 1 then 'Grüße aus 東京 😀' else text || ' ' || n end, embedding, model, generation, search_config
      from document_chunks, generate_series(1, 300) n where document_id = ${documentId} and index = 0`;
    // As if every chunk had been stored before 0013, and this release had just arrived.
    await sql`update document_chunks set text_hash = null`;
    await sql`delete from background_migrations`;
    const total = (await sql<{ count: number }[]>`select count(*)::int as count from document_chunks`)[0]!.count;

    expect(await pendingBackgroundMigrations(sql, new Date())).toEqual([NAME]);
    const outcomes: string[] = [];
    for (let outcome = ''; outcome !== 'done';) outcomes.push((outcome = await slice(1)));
    // One batch per slice of 1 ms, 100 rows at first: it went on from its cursor each time.
    expect(outcomes.filter((outcome) => outcome === 'more').length).toBeGreaterThanOrEqual(3);

    const chunks = await sql<{ text: string; hash: string | null }[]>`select text, text_hash as hash from document_chunks`;
    expect(chunks.length).toBe(total);
    for (const chunk of chunks) expect(chunk.hash).toBe(textHash(chunk.text));
    const [row] = await listBackgroundMigrations(sql);
    expect(row).toMatchObject({ name: NAME, state: 'succeeded', rowsDone: total, rowsTotal: total, lastError: null });
    expect(row!.batches).toBe(outcomes.length);

    // Finished: a later start queues nothing, and a stray slice ends at once.
    expect(await pendingBackgroundMigrations(sql, new Date())).toEqual([]);
    expect(await slice(1_000)).toBe('done');
  });

  it.skipIf(!externalDatabaseUrl)('leaves a batch that another worker holds to it', async () => {
    const { sql } = server.db;
    await sql`update background_migrations set state = 'running', finished_at = null, cursor = null where name = ${NAME}`;
    const other = await openSecondClient(server.db);
    try {
      let release = () => {};
      const released = new Promise<void>((resolve) => (release = resolve));
      const holding = other.sql.begin(async (tx) => {
        await tx`select 1 from background_migrations where name = ${NAME} for update`;
        await released;
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await slice(1_000)).toBe('busy');
      release();
      await holding;
      for (let outcome = ''; outcome !== 'done';) outcome = await slice(1_000);
    } finally {
      await other.close();
    }
  });
});

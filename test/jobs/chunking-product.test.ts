/**
 * Issue 23's text through the whole product on the embedded default (inline worker, the API's
 * process): a plain-text upload of 2 million characters with no space, extracted and indexed by
 * document.extract and document.index jobs, while /healthz keeps answering within a second. Before
 * chunking was linear and ran in a thread (src/jobs/chunking.ts, src/jobs/chunker.ts), each of the
 * two jobs held the API's event loop ~19 s while it chunked this text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/server.ts';
import { pollHealth, startTenantServer, uploadDocument, waitForJob, type HealthPoll, type Tenant } from './support.ts';

/** 2 million U+0120 (Ġ, 4 MB of UTF-8): no space, and the two-byte text whose search was slowest. */
const TEXT = '\u0120'.repeat(2_000_000);

describe('a 2-million-character text with no space', () => {
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => ({ server, t } = await startTenantServer()), 60_000);
  afterAll(() => server?.close());

  it('is extracted and indexed while /healthz keeps answering throughout', { timeout: 300_000 }, async () => {
    // /healthz polled until the jobs are done: a liveness check (support.ts pollHealth).
    const poll = pollHealth(server);
    let health: HealthPoll;
    try {
      const document = await uploadDocument(t, 'no-space.txt', 'text/plain', new TextEncoder().encode(TEXT));
      const extract = await t.client.jobs.create({ organizationId: t.org, kind: 'document.extract', documentId: document.id });
      expect(await waitForJob(t, extract.id, undefined, 120_000)).toMatchObject({ status: 'succeeded', result: { characters: TEXT.length } });
      const index = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id });
      // 1000 characters a chunk, each starting 800 after the last.
      expect(await waitForJob(t, index.id, undefined, 240_000)).toMatchObject({ status: 'succeeded', result: { chunks: 2500 } });
    } finally {
      health = await poll.stop();
    }
    const [stored] = await server.db.sql<{ chunks: number }[]>`select count(*)::int as chunks from document_chunks`;
    expect(stored!.chunks).toBe(2500);
    console.info(`2 M characters without a space: slowest /healthz ${Math.round(health.slowestMs)} ms of ${health.answers}`);
    expect(health.failures).toEqual([]);
    expect(health.answers).toBeGreaterThan(10);
  });
});

/**
 * document.index is priced by chunk count (2 credits per started block of 100 chunks): from the
 * extraction when there is one, else 2 first and the rest once the job has extracted the text,
 * against the plan; the stored text counts toward the workspace's storage.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chunkText } from '../../src/jobs/chunking.ts';
import { indexCredits } from '../../src/credits/pricing.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { creditsSpent, tenant, uploadDocument, waitForJob, type Tenant } from './support.ts';

/**
 * Just over 100 chunks of distinct sentences, in paragraphs of 7 sentences (about 440 characters):
 * the chunker cuts after the one paragraph break each chunk's window holds, so the chunks are about
 * 630 characters instead of 1000 and the model embeds a third less for the same count (the
 * embeddings are most of this file's CPU).
 */
const LONG = Array.from({ length: 105 }, (_, p) =>
  Array.from({ length: 7 }, (_, s) => p * 7 + s)
    .map((i) => `Sentence ${i} of the long report says something about topic ${i % 37}.`)
    .join(' '),
).join('\n\n');

describe('indexing priced by chunks', () => {
  let server: TestServer;
  let t: Tenant;
  const limits = { aiCredits: 1000 };
  beforeAll(async () => {
    server = await startTestServer({
      overrides: { plans: { limitsFor: async () => ({ plan: 'free', limits: { workspaces: 3, members: 5, aiCredits: limits.aiCredits, storageBytes: 1 << 30 } }) } },
    });
    t = await tenant(server);
  }, 60_000);
  afterAll(() => server?.close());

  it('prices the table', () => {
    expect([0, 1, 100, 101, 200, 201].map(indexCredits)).toEqual([2, 2, 2, 4, 4, 6]);
  });

  it('charges 2 at create without an extraction, the rest once the text is known, and the full price from an extraction', { timeout: 120_000 }, async () => {
    const chunks = chunkText(LONG).length;
    expect(chunks).toBeGreaterThan(100);
    expect(chunks).toBeLessThanOrEqual(200);
    const document = await uploadDocument(t, 'long.txt', 'text/plain', new TextEncoder().encode(LONG));
    const first = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id });
    expect(first.credits).toBe(2);
    expect(await waitForJob(t, first.id)).toMatchObject({ status: 'succeeded', credits: 4, result: { chunks } });
    expect(await creditsSpent(server, t.org)).toBe(4);

    const second = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id });
    expect(second.credits).toBe(4);
    expect(await waitForJob(t, second.id)).toMatchObject({ status: 'succeeded', credits: 4 });
    expect(await creditsSpent(server, t.org)).toBe(8);

    // The stored text counts toward the workspace's storage, beside the file's bytes.
    const { storage } = await t.client.documents.list({ organizationId: t.org, workspaceId: t.workspaceId });
    const { text } = (await t.client.documents.text({ id: document.id }))!;
    expect(storage.usedBytes).toBe(Buffer.byteLength(LONG) + Buffer.byteLength(text));
  });

  it('fails the job at once, with a message, when the plan cannot cover the rest', { timeout: 120_000 }, async () => {
    const other = await tenant(server);
    const document = await uploadDocument(other, 'long.txt', 'text/plain', new TextEncoder().encode(LONG));
    limits.aiCredits = 3; // the first 2 fit, the 2 more do not
    try {
      const job = await other.client.jobs.create({ organizationId: other.org, kind: 'document.index', documentId: document.id });
      const failed = await waitForJob(other, job.id);
      expect(failed).toMatchObject({ status: 'failed', attempt: 1, credits: 2 });
      expect(failed.error!.message).toMatch(/costs 4 AI credits; the plan's credits left this period do not cover the 2 still due\.$/);
      expect(await creditsSpent(server, other.org)).toBe(2);
    } finally {
      limits.aiCredits = 1000;
    }
  });
});

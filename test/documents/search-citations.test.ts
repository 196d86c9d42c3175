/**
 * Citations on documents.search's hits (where the chunk is in its document: its range in the
 * extracted text, its PDF pages, its headings) and documents.text's `start`/`end`, which shows a
 * hit's passage in context: the text at a hit's citation is the hit's text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClientError } from '../../clients/typescript/src/index.ts';
import { fixture } from '../ai-service/support.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tenant, uploadDocument, waitForJob, type Tenant } from '../jobs/support.ts';

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: ApiClientError) => error,
  );

describe('documents.search cites where each hit is', () => {
  let server: TestServer;
  let t: Tenant;
  let pdf: string;
  let notes: string;
  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
    pdf = (await uploadDocument(t, 'report.pdf', 'application/pdf', fixture('report.pdf'))).id;
    notes = (await uploadDocument(t, 'notes.txt', 'text/plain', new TextEncoder().encode('The greenhouse tomatoes ripen in late July.'))).id;
    const jobs = [];
    for (const documentId of [pdf, notes]) jobs.push((await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId })).id);
    for (const job of jobs) expect(await waitForJob(t, job, undefined, 120_000)).toMatchObject({ status: 'succeeded' });
  }, 180_000);
  afterAll(() => server?.close());

  const hitOf = async (query: string, documentId: string) => {
    const { results } = await t.client.documents.search({ workspaceId: t.workspaceId, query, limit: 10 });
    const hit = results.find((result) => result.documentId === documentId);
    expect(hit, query).toBeDefined();
    return hit!;
  };

  it("a PDF hit names the pages it spans, and its range is the hit's text in the document's text", async () => {
    // report.pdf: page 1 is about the cooperative, page 2 starts "The solar array".
    const hit = await hitOf('solar array', pdf);
    expect(hit.citation).toBeDefined();
    expect(hit.citation!.pages).toBeDefined();
    expect(hit.citation!.pages!.last).toBe(2);
    expect(hit.citation!.pages!.first).toBeGreaterThanOrEqual(1);
    expect(hit.citation!.pages!.first).toBeLessThanOrEqual(2);
    const { start, end } = hit.citation!;
    const passage = await t.client.documents.text({ id: pdf, start, end });
    expect(passage).toMatchObject({ text: hit.text, range: { start, end } });
    const whole = await t.client.documents.text({ id: pdf });
    expect(whole!.text.slice(start, end)).toBe(hit.text);
    expect(passage!.characters).toBe(whole!.characters);
  });

  it('a plain-text hit has its range and no pages', async () => {
    const hit = await hitOf('tomatoes', notes);
    expect(hit.citation).toEqual({ start: 0, end: 'The greenhouse tomatoes ripen in late July.'.length });
  });

  it('a chunk stored before citations were recorded has none', async () => {
    const hit = await hitOf('tomatoes', notes);
    await server.db.sql`update document_chunks set start_offset = null, end_offset = null where id = ${hit.chunkId}`;
    try {
      expect((await hitOf('tomatoes', notes)).citation).toBeUndefined();
    } finally {
      await server.db.sql`update document_chunks set start_offset = ${hit.citation!.start}, end_offset = ${hit.citation!.end} where id = ${hit.chunkId}`;
    }
  });

  it.each([
    [{ start: 4 }, 'greenhouse tomatoes ripen in late July.', { start: 4, end: 43 }],
    [{ end: 14 }, 'The greenhouse', { start: 0, end: 14 }],
    [{ start: 4, end: 14 }, 'greenhouse', { start: 4, end: 14 }],
    [{ start: 30, end: 1_000 }, 'in late July.', { start: 30, end: 43 }],
    [{ start: 500, end: 600 }, '', { start: 43, end: 43 }],
    [{ start: 7, end: 7 }, '', { start: 7, end: 7 }],
  ])('documents.text %j answers that part, clamped, with the offsets used', async (range, text, used) => {
    expect(await t.client.documents.text({ id: notes, ...range })).toEqual({ text, characters: 43, pages: null, range: used });
  });

  it('documents.text without a range answers the whole text and no range', async () => {
    expect(await t.client.documents.text({ id: notes })).toEqual({ text: 'The greenhouse tomatoes ripen in late July.', characters: 43, pages: null });
  });

  it('documents.text answers 400 for an end before the start, or offsets that are not whole numbers from 0', async () => {
    for (const [range, field] of [
      [{ start: 10, end: 5 }, 'end'],
      [{ start: -1 }, 'start'],
      [{ end: 1.5 }, 'end'],
    ] as const) {
      const error = await failure(t.client.documents.text({ id: notes, ...(range as object) }));
      expect(error, JSON.stringify(range)).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
      expect(JSON.stringify((error.data as { issues: unknown }).issues)).toContain(field);
    }
  });
});

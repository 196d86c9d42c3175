/**
 * documents.search's `highlights`: ranges into each hit's text of the words that match the query's
 * words as the full-text ranking sees them (PostgreSQL's `english` analyzer): stemmed forms
 * included, stop words never, whatever the case; none on a hit that shares no word with the query.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tenant, uploadDocument, waitForJob, type Tenant } from '../jobs/support.ts';

const PASSAGES = {
  running: 'She runs by the river every morning. The run is short, but Running keeps her calm; the runner waves.',
  lease: "Adaeze Okonkwo-Baptiste signed the lease for the new office in Lisbon at eight o'clock.",
  bakery: 'The bakery on the corner sells fresh bread and croissants every morning.',
} as const;

describe('documents.search highlights the matched words', () => {
  let server: TestServer;
  let t: Tenant;
  const names = new Map<string, keyof typeof PASSAGES>();
  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
    const jobs: string[] = [];
    for (const [name, text] of Object.entries(PASSAGES)) {
      const document = await uploadDocument(t, `${name}.txt`, 'text/plain', new TextEncoder().encode(text));
      names.set(document.id, name as keyof typeof PASSAGES);
      jobs.push((await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id })).id);
    }
    for (const job of jobs) expect(await waitForJob(t, job, undefined, 120_000)).toMatchObject({ status: 'succeeded' });
  }, 180_000);
  afterAll(() => server?.close());

  /** Each hit's highlighted words, by passage name. */
  const highlighted = async (query: string) => {
    const { results } = await t.client.documents.search({ workspaceId: t.workspaceId, query, limit: 3 });
    expect(results).toHaveLength(3);
    return Object.fromEntries(
      results.map((hit) => {
        for (const [i, range] of hit.highlights.entries()) {
          expect(range.start).toBeLessThan(range.end);
          if (i > 0) expect(range.start).toBeGreaterThanOrEqual(hit.highlights[i - 1]!.end);
        }
        return [names.get(hit.documentId)!, hit.highlights.map((range) => hit.text.slice(range.start, range.end))];
      }),
    );
  };

  it.each([
    // Stemming: "running", "runs" and "run" share the lexeme "run"; "runner" is a word of its own.
    ['running', { running: ['runs', 'run', 'Running'], lease: [], bakery: [] }],
    ['RUNS', { running: ['runs', 'run', 'Running'], lease: [], bakery: [] }],
    // Stop words ("the", "in") never; the parts of a hyphenated name, and "mornings" stemmed.
    ['the lease in Okonkwo-Baptiste', { running: [], lease: ['Okonkwo', 'Baptiste', 'lease'], bakery: [] }],
    ['mornings', { running: ['morning'], lease: [], bakery: ['morning'] }],
  ])('"%s" highlights the words its stems match', async (query, expected) => {
    expect(await highlighted(query)).toEqual(expected);
  });

  it('points at the words themselves: ranges into `text` in UTF-16 indexes', async () => {
    const { results } = await t.client.documents.search({ workspaceId: t.workspaceId, query: 'croissants bread', limit: 1 });
    const text = PASSAGES.bakery;
    expect(results[0]!.text).toBe(text);
    expect(results[0]!.highlights).toEqual([
      { start: text.indexOf('bread'), end: text.indexOf('bread') + 5 },
      { start: text.indexOf('croissants'), end: text.indexOf('croissants') + 10 },
    ]);
  });

  it('highlights nothing when the query has only stop words, while meaning still finds hits', async () => {
    const { results } = await t.client.documents.search({ workspaceId: t.workspaceId, query: 'the of and', limit: 3 });
    expect(results.length).toBeGreaterThan(0);
    for (const hit of results) expect(hit.highlights).toEqual([]);
  });
});

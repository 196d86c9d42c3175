/**
 * documents.search with the real model, end to end: passages found by meaning when they share no
 * word with the query, a rare word found by full text, a passage in another language, chunks of
 * another embedding model never read, and an order that does not depend on `limit`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_EMBEDDING_MODEL } from '../../src/ai-service/client.ts';
import { searchChunks } from '../../src/documents/chunk-search.ts';
import { vectorLiteral } from '../../src/documents/text-store.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tenant, uploadDocument, waitForJob, type Tenant } from '../jobs/support.ts';

const PASSAGES = {
  automobiles: 'Automobiles need regular maintenance: change the engine oil and rotate the tyres every ten thousand kilometres.',
  physician: 'The physician examined the patient and prescribed a course of antibiotics for the infection.',
  bakery: "The bakery on the corner sells fresh bread and croissants every morning from six o'clock.",
  revenue: 'Quarterly revenue grew by fourteen percent, led by strong sales in Europe and Asia.',
  hiking: 'The hiking trail climbs steeply through pine forest to a quiet mountain lake.',
  lease: 'Adaeze Okonkwo-Baptiste signed the lease for the new office in Lisbon.',
  signing: 'The tenant signed a lease agreement for office space near the harbour.',
  german: 'Der Zug nach München fährt jeden Morgen um acht Uhr vom Hauptbahnhof ab.',
  french: 'Les enfants jouent dans le jardin pendant que leurs parents préparent le dîner.',
} as const;
type Name = keyof typeof PASSAGES;

describe('documents.search ranks by meaning and by words', () => {
  let server: TestServer;
  let t: Tenant;
  const ids = new Map<string, Name>();
  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
    const jobs: string[] = [];
    for (const [name, text] of Object.entries(PASSAGES)) {
      const document = await uploadDocument(t, `${name}.txt`, 'text/plain', new TextEncoder().encode(text));
      ids.set(document.id, name as Name);
      jobs.push((await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id })).id);
    }
    for (const job of jobs) expect(await waitForJob(t, job, undefined, 120_000)).toMatchObject({ status: 'succeeded' });
  }, 180_000);
  afterAll(() => server?.close());

  const search = async (query: string, limit = 5) => {
    const answer = await t.client.documents.search({ workspaceId: t.workspaceId, query, limit });
    return { ...answer, names: answer.results.map((hit) => ids.get(hit.documentId)) };
  };

  it.each([
    ['car', 'automobiles'],
    ['doctor', 'physician'],
    ['pastry shop', 'bakery'],
    ['company earnings increased', 'revenue'],
    ['walking path in the woods', 'hiking'],
  ])('"%s" shares no word with the %s passage and finds it first', async (query, expected) => {
    const { model, names, results } = await search(query);
    expect(model).toBe(LOCAL_EMBEDDING_MODEL);
    expect(names[0]).toBe(expected);
    expect(results[0]!.score).toBeGreaterThan(0);
  });

  it('finds a rare name by its words: full text ranks it first where meaning alone may not', async () => {
    const query = 'Okonkwo-Baptiste';
    expect((await search(query)).names[0]).toBe('lease');
    const fulltext = await searchChunks(
      server.db.sql,
      { workspaceId: t.workspaceId, model: LOCAL_EMBEDDING_MODEL, text: query, vector: (await server.services.ai.embed([query])).vectors[0]!, limit: 5 },
      'fulltext',
    );
    expect(fulltext.map((hit) => ids.get(hit.documentId))).toEqual(['lease']);
  });

  it.each([
    ['Zug nach München', 'german'],
    ['enfants jardin', 'french'],
  ])('finds a passage in another language: "%s"', async (query, expected) => {
    expect((await search(query)).names[0]).toBe(expected);
  });

  it('answers the same order whatever the limit: a smaller limit is a prefix', async () => {
    for (const query of ['office lease', 'food', 'travel by train']) {
      const all = await search(query, 9);
      for (const limit of [1, 2, 5]) expect((await search(query, limit)).results).toEqual(all.results.slice(0, limit));
    }
  });

  it('reads only the chunks of the model that embedded the query', async () => {
    // A chunk of a retired model whose vector is exactly the query's and whose text has its words.
    const [automobile] = await server.db.sql<{ documentId: string }[]>`
      select document_id as "documentId" from document_chunks where text like 'Automobiles%'`;
    const vector = (await server.services.ai.embed(['car'])).vectors[0]!;
    const [document] = await server.db.sql`select organization_id, workspace_id from documents where id = ${automobile!.documentId}`;
    await server.db.sql`
      insert into document_chunks (id, organization_id, workspace_id, document_id, index, text, model, embedding)
      values ('chk_retiredmodelchunk000001', ${document!.organization_id}, ${document!.workspace_id}, ${automobile!.documentId}, 99,
              'car car car', 'retired-model', ${vectorLiteral(vector)}::vector)`;
    try {
      const { results } = await search('car', 9);
      expect(results.map((hit) => hit.chunkId)).not.toContain('chk_retiredmodelchunk000001');
    } finally {
      await server.db.sql`delete from document_chunks where id = 'chk_retiredmodelchunk000001'`;
    }
  });
});

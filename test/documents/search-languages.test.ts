/**
 * Full text in every language (issue 24, item 4): the AI service detects each document's language
 * at extraction, its chunks are indexed with that language's configuration (CJK split into words
 * first) and the query is analysed the same way, so a German, French, Chinese or Japanese passage
 * is found by a word of it, inflected forms included, and its highlights point at the matched
 * words. Ranked by full text alone (SEARCH_RANKING=fulltext), so meaning cannot find them instead.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../support/server.ts';
import { startTenantServer, uploadDocument, waitForJob, type Tenant } from '../jobs/support.ts';

const PASSAGES = {
  german: 'Die alten Häuser der Altstadt wurden im neunzehnten Jahrhundert von Handwerkern aus der Region gebaut und stehen heute unter Denkmalschutz.',
  french: "Les maisons de la vieille ville ont été construites au dix-neuvième siècle par des artisans de la région et sont aujourd'hui protégées.",
  chinese: '东京塔是日本东京的一座电波塔，建于一九五八年，高三百三十三米，是东京最著名的地标建筑之一。',
  japanese: '東京タワーは東京都港区芝公園にある総合電波塔で、一九五八年に完成しました。観光客に人気があります。',
  english: 'The old houses of the town were built in the nineteenth century by craftsmen from the region and are protected today.',
} as const;
type Name = keyof typeof PASSAGES;

describe('documents.search in the language of each document', () => {
  let server: TestServer;
  let t: Tenant;
  const names = new Map<string, Name>();
  beforeAll(async () => {
    ({ server, t } = await startTenantServer({ env: { SEARCH_RANKING: 'fulltext' } }));
    const jobs: string[] = [];
    for (const [name, text] of Object.entries(PASSAGES)) {
      const document = await uploadDocument(t, `${name}.txt`, 'text/plain', new TextEncoder().encode(text));
      names.set(document.id, name as Name);
      jobs.push((await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id })).id);
    }
    for (const job of jobs) expect(await waitForJob(t, job, undefined, 120_000)).toMatchObject({ status: 'succeeded' });
  }, 180_000);
  afterAll(() => server?.close());

  /** The hits' passage names and highlighted words, best first. */
  const search = async (query: string) => {
    const { results } = await t.client.documents.search({ workspaceId: t.workspaceId, query, limit: 10 });
    return results.map((hit) => ({ name: names.get(hit.documentId)!, words: hit.highlights.map((range) => hit.text.slice(range.start, range.end)) }));
  };

  it("detects each text's language and indexes its chunks with the matching configuration", async () => {
    const rows = await server.db.sql<{ name: string; language: string; config: string; segmented: boolean }[]>`
      select d.name, t.language, c.search_config::text as config, c.search_text is not null as segmented
      from documents d join document_texts t on t.document_id = d.id join document_chunks c on c.document_id = d.id
      where d.workspace_id = ${t.workspaceId} order by d.name`;
    expect(rows).toEqual([
      { name: 'chinese.txt', language: 'cmn', config: 'simple', segmented: true },
      { name: 'english.txt', language: 'eng', config: 'english', segmented: false },
      { name: 'french.txt', language: 'fra', config: 'french', segmented: false },
      { name: 'german.txt', language: 'deu', config: 'german', segmented: false },
      { name: 'japanese.txt', language: 'jpn', config: 'simple', segmented: true },
    ]);
  });

  it.each<[string, Name, string[]]>([
    // German stemming joins the singular and the plural with its umlaut.
    ['Haus', 'german', ['Häuser']],
    ['Handwerker', 'german', ['Handwerkern']],
    ['maison construite', 'french', ['maisons', 'construites']],
    // The query is split as the text was: 电波塔 is the words 电波 and 塔, and 东京塔 holds 塔 too.
    ['电波塔', 'chinese', ['塔', '电波', '塔']],
    ['芝公園', 'japanese', ['芝公園']],
    ['観光客の人気', 'japanese', ['観光', '客', '人気']],
  ])('"%s" finds the %s passage by a word of it and highlights that word', async (query, name, words) => {
    const hits = await search(query);
    expect(hits[0]).toEqual({ name, words });
  });

  it('re-indexes a document with the configuration of its stored language: `english` for a text stored before detection', async () => {
    const document = await uploadDocument(t, 'later.txt', 'text/plain', new TextEncoder().encode(PASSAGES.german.replace('Altstadt', 'Neustadt')));
    const index = async () => {
      const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id });
      expect(await waitForJob(t, job.id, undefined, 120_000)).toMatchObject({ status: 'succeeded' });
      const rows = await server.db.sql<{ config: string }[]>`
        select distinct c.search_config::text as config from document_chunks c join documents d on d.id = c.document_id
        where c.document_id = ${document.id} and c.generation = d.chunk_generation`;
      return rows.map((row) => row.config);
    };
    expect(await index()).toEqual(['german']);
    // As a text extracted before 0014 has it: indexed as every text was until then.
    await server.db.sql`update document_texts set language = null where document_id = ${document.id}`;
    expect(await index()).toEqual(['english']);
    await server.db.sql`update document_texts set language = 'deu' where document_id = ${document.id}`;
    expect(await index()).toEqual(['german']);
    await t.client.documents.delete({ id: document.id });
  });

  it('weighs a word by the chunks holding it in every language: a German passage using an English word once stays below English ones using it twice', async () => {
    // Before, a term's df was counted in its configuration's chunks only (1 German chunk holds
    // `protein`), against N over all chunks, so `german`'s `protein` weighed as a rare word and the
    // German passage came first; now both terms have the word's df (4 chunks), and term frequency decides.
    const texts = {
      soy: 'Soy protein is a complete protein that many people eat instead of meat at lunch and dinner.',
      whey: 'Whey protein comes from milk, and athletes often drink protein shakes after training at the gym.',
      egg: 'Egg whites are almost pure protein, and a boiled egg gives about six grams of protein for breakfast.',
      german: 'Viele Sportler trinken nach dem Training im Verein einen Shake mit Protein und essen danach gemeinsam.',
    };
    const added = new Map<string, string>();
    for (const [name, text] of Object.entries(texts)) {
      const document = await uploadDocument(t, `${name}.txt`, 'text/plain', new TextEncoder().encode(text));
      added.set(document.id, name);
      const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId: document.id });
      expect(await waitForJob(t, job.id, undefined, 120_000)).toMatchObject({ status: 'succeeded' });
    }
    try {
      const configs = await server.db.sql<{ config: string }[]>`
        select c.search_config::text as config from document_chunks c where c.document_id = any(${[...added.keys()]}::text[]) order by c.search_config::text`;
      expect(configs.map((row) => row.config)).toEqual(['english', 'english', 'english', 'german']);
      const { results } = await t.client.documents.search({ workspaceId: t.workspaceId, query: 'protein', limit: 10 });
      const names = results.map((hit) => added.get(hit.documentId));
      expect(names).toHaveLength(4);
      expect(names[3]).toBe('german');
    } finally {
      for (const id of added.keys()) await t.client.documents.delete({ id });
    }
  });

  it('ranks the English passage for an English query in a workspace with German, and the German one for German', async () => {
    // "houses" stemmed by `english` is "hous"; the German chunks' lexemes are German stems, never compared with it.
    expect(await search('houses built by craftsmen')).toEqual([{ name: 'english', words: ['houses', 'built', 'craftsmen'] }]);
    expect(await search('Häuser gebaut')).toEqual([{ name: 'german', words: ['Häuser', 'gebaut'] }]);
  });
});

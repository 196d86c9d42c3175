/**
 * What indexing stores of where each chunk came from (issue 24, item 1) and how it stores it (item
 * 5), through the real pipeline (upload, document.index, the companion AI service): each chunk's
 * range in the extracted text, a PDF chunk's pages, a Markdown chunk's heading path; a re-index
 * of an unchanged text sends nothing to embed, and a text the document repeats is embedded once. Storing in short statements is in
 * citations-storage.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAiClient, type AiClient } from '../../src/ai-service/client.ts';
import { pdf } from '../support/hostile-documents.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { serve } from '../ai-service/support.ts';
import { tenant, uploadDocument, waitForJob, type Tenant } from '../jobs/support.ts';
import { readFileSync } from 'node:fs';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/${name}`, import.meta.url));

interface ChunkRow {
  index: number;
  text: string;
  start: number;
  end: number;
  firstPage: number | null;
  lastPage: number | null;
  headingPath: string[] | null;
  textHash: string;
  embedding: string;
}

/** A PDF whose page N holds `lines` lines naming it ("page2 line 7 ..."), one text operator each. */
function pagesPdf(pages: number, lines: number): Buffer {
  const font = 3 + pages * 2;
  const objects = ['<< /Type /Catalog /Pages 2 0 R >>', `<< /Type /Pages /Kids [${Array.from({ length: pages }, (_, i) => `${3 + i * 2} 0 R`).join(' ')}] /Count ${pages} >>`];
  for (let page = 1; page <= pages; page++) {
    const shows = Array.from({ length: lines }, (_, line) => `(page${page} line ${line} says something about the harbour.) Tj 0 -12 Td`).join('\n');
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${4 + (page - 1) * 2} 0 R >>`);
    objects.push({ dictionary: '', stream: Buffer.from(`BT /F1 8 Tf 20 780 Td 12 TL\n${shows}\nET`) } as never);
  }
  objects.push('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  return pdf(objects);
}

describe('citations of indexed chunks', async () => {
  // The real companion, with every embeddings call counted on its way there.
  const service = await serve();
  let embedCalls = 0;
  let embedTexts = 0;
  const real = createAiClient({ url: service.url });
  const counting: AiClient = { ...real, embed: (texts, options) => ((embedCalls += 1), (embedTexts += texts.length), real.embed(texts, options)) };
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => {
    server = await startTestServer({ aiService: false, env: { AI_URL: service.url }, overrides: { ai: counting } });
    t = await tenant(server);
  }, 60_000);
  afterAll(() => server?.close());

  const chunksOf = (documentId: string) => server.db.sql<ChunkRow[]>`
    select c.index, c.text, c.start_offset as start, c.end_offset as "end", c.first_page as "firstPage", c.last_page as "lastPage",
           c.heading_path as "headingPath", c.text_hash as "textHash", c.embedding::text as embedding
    from document_chunks c join documents d on d.id = c.document_id
    where c.document_id = ${documentId} and c.generation = d.chunk_generation
    order by c.index`;

  /**
   * Uploads and indexes the document (the job extracts it first, so the places come from the
   * extraction's answer), then indexes it again (from the stored text, page starts and headings):
   * both must place the chunks alike.
   */
  async function indexed(name: string, contentType: Parameters<typeof uploadDocument>[2], bytes: Uint8Array) {
    const document = await uploadDocument(t, name, contentType, bytes);
    await index(document.id);
    const text = (await t.client.documents.text({ id: document.id }))!.text;
    const chunks = await chunksOf(document.id);
    const calls = embedCalls;
    await index(document.id);
    expect(await chunksOf(document.id)).toEqual(chunks);
    expect(embedCalls).toBe(calls);
    return { id: document.id, text, chunks };
  }

  async function index(documentId: string) {
    const job = await t.client.jobs.create({ organizationId: t.org, kind: 'document.index', documentId });
    expect(await waitForJob(t, job.id, undefined, 120_000)).toMatchObject({ status: 'succeeded' });
  }

  it('gives the chunk of the two-page PDF fixture both its pages', async () => {
    const { text, chunks } = await indexed('report.pdf', 'application/pdf', fixture('report.pdf'));
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toMatchObject({ start: 0, end: text.length, firstPage: 1, lastPage: 2, headingPath: null });
  }, 120_000);

  it('gives each chunk of a longer PDF the pages it spans, and a range that slices it out of the text', async () => {
    const { text, chunks } = await indexed('harbour.pdf', 'application/pdf', pagesPdf(3, 40));
    expect(chunks.length).toBeGreaterThan(4);
    const spanning = chunks.filter((chunk) => chunk.firstPage !== chunk.lastPage);
    expect(spanning.length).toBeGreaterThan(0);
    for (const chunk of chunks) {
      expect(text.slice(chunk.start, chunk.end)).toBe(chunk.text);
      // The pages a chunk names are exactly the pages whose lines it holds.
      const named = [...new Set([...chunk.text.matchAll(/page(\d)/g)].map((match) => Number(match[1])))];
      expect(named).toEqual(Array.from({ length: chunk.lastPage! - chunk.firstPage! + 1 }, (_, i) => chunk.firstPage! + i));
    }
  }, 120_000);

  it('gives Markdown chunks their heading path and ranges in a text of multi-byte and astral characters', async () => {
    const section = (word: string) => Array.from({ length: 40 }, (_, i) => `${word} ${i}: Größe 東京 😀 naïve 𝔘𝔫𝔦.`).join(' ');
    const markdown = `# Guide\n\n${section('intro')}\n\n## Birds\n\n${section('robin')}\n\n### Owls\n\n${section('owl')}\n\n## Trees\n\n${section('oak')}`;
    const { text, chunks } = await indexed('guide.md', 'text/markdown', Buffer.from(markdown));
    expect(text).toBe(markdown);
    for (const chunk of chunks) {
      expect(text.slice(chunk.start, chunk.end)).toBe(chunk.text);
      expect(chunk.firstPage).toBeNull();
    }
    // The path at a chunk's start: the headings above it, each closing those of its level and deeper.
    const headings = [
      ['# Guide', ['Guide']],
      ['## Birds', ['Guide', 'Birds']],
      ['### Owls', ['Guide', 'Birds', 'Owls']],
      ['## Trees', ['Guide', 'Trees']],
    ] as const;
    const expected = (start: number) => headings.filter(([line]) => markdown.indexOf(line) <= start).at(-1)?.[1] ?? null;
    expect(new Set(chunks.map((chunk) => JSON.stringify(chunk.headingPath))).size).toBe(4);
    for (const chunk of chunks) expect(chunk.headingPath).toEqual(expected(chunk.start));
  }, 120_000);

  it('re-indexes a text that did not change without embedding or storing anything, keeping the same chunks and vectors', async () => {
    // 5 chunks: more than the 3 this asks for, and cheap to embed.
    const plain = Array.from({ length: 60 }, (_, i) => `Sentence ${i} of the tide tables says the water rises at ${i % 12} o'clock.`).join(' ');
    const before = embedCalls;
    const first = await indexed('tides.txt', 'text/plain', Buffer.from(plain));
    expect(first.chunks.length).toBeGreaterThan(3);
    expect(embedCalls).toBeGreaterThan(before);
    // indexed() indexed it twice already; once more, looking at what was stored.
    const afterFirst = embedCalls;
    const generation = async () => (await server.db.sql<{ g: string }[]>`select chunk_generation::text as g from documents where id = ${first.id}`)[0]!.g;
    const stored = await generation();
    await index(first.id);
    expect(embedCalls).toBe(afterFirst);
    expect(await chunksOf(first.id)).toEqual(first.chunks);
    // Nothing was written again either: the same generation of chunks is the document's.
    expect(await generation()).toBe(stored);
    expect(stored).not.toBe('0');
    // Still found by meaning and by words.
    const answer = await t.client.documents.search({ workspaceId: t.workspaceId, query: 'when does the water rise', limit: 3 });
    expect(answer.results[0]).toMatchObject({ documentId: first.id });
  }, 120_000);

  it('embeds a chunk text the document repeats once, and stores its vector for every chunk of it', async () => {
    // A 40-character sentence over and over: the chunks (starting 800 characters apart) repeat.
    const plain = 'The ferry leaves the pier at half past.\n'.repeat(150);
    const before = embedTexts;
    const document = await uploadDocument(t, 'ferry.txt', 'text/plain', Buffer.from(plain));
    await index(document.id);
    const chunks = await chunksOf(document.id);
    const distinct = new Set(chunks.map((chunk) => chunk.text));
    expect(distinct.size).toBeLessThan(chunks.length - 1);
    expect(embedTexts - before).toBe(distinct.size);
    // Every chunk has its text's vector, the same for the same text.
    const vectorOf = new Map<string, string>();
    for (const chunk of chunks) {
      expect(chunk.embedding).toMatch(/^\[/);
      expect(vectorOf.get(chunk.text) ?? chunk.embedding).toBe(chunk.embedding);
      vectorOf.set(chunk.text, chunk.embedding);
    }
    const answer = await t.client.documents.search({ workspaceId: t.workspaceId, query: 'when does the boat depart', limit: 50 });
    expect(answer.results.filter((hit) => hit.documentId === document.id)).toHaveLength(chunks.length);
  }, 120_000);
});

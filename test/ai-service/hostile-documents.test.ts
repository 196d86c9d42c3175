/**
 * The documents of the security review, rebuilt small (test/support/hostile-documents.ts): each
 * fails its own request with a 422 a person can read, while a document sent beside it is read, and
 * the same Extractor reads sane documents afterwards.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createExtractor, type Extractor } from '../../src/ai-service/extractor.ts';
import type { ExtractContentType } from '../../src/ai-service/protocol.ts';
import { loadConfig, type ExtractionLimits } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { DOCX_TYPE, docx, docxBomb, nestedHtml, pdfOfPages, pdfOfText, pdfStreamBomb, pngHeader, wideJson } from '../support/hostile-documents.ts';

const logger = createLogger('silent');
const DEFAULTS = loadConfig({}).ai.extraction;
const fixture = (name: string) => readFileSync(join(import.meta.dirname, '..', 'fixtures', name));
const as = (type: string) => ({ type: type as ExtractContentType, charset: undefined });

function extractorWith(limits: Partial<ExtractionLimits> = {}): Extractor {
  const extractor = createExtractor({ limits: { ...DEFAULTS, ...limits }, logger });
  afterAll(() => extractor.close());
  return extractor;
}

/** The fixtures every type should still read after a hostile document. */
async function expectSaneDocumentsRead(extractor: Extractor): Promise<void> {
  const [pdf, word, html] = await Promise.all([
    extractor.extract(fixture('report.pdf'), as('application/pdf')),
    extractor.extract(fixture('memo.docx'), as(DOCX_TYPE)),
    extractor.extract(fixture('page.html'), as('text/html')),
  ]);
  expect(pdf).toMatchObject({ pages: 2, text: expect.stringContaining('Northwind') });
  expect(word).toMatchObject({ pages: null, text: expect.stringContaining('Harbour Street') });
  expect(html).toMatchObject({ pages: null, text: expect.stringContaining('Garden club newsletter') });
}

describe('hostile documents, default limits', () => {
  const extractor = extractorWith();

  it.each([
    {
      given: 'a 350 KB DOCX whose word/document.xml inflates to 100 MB',
      bytes: () => docxBomb(100),
      type: DOCX_TYPE,
      want: expect.stringMatching(/^The DOCX document's part word\/document\.xml inflates to [\d ]+ times its stored size; at most 100 times can be read\.$/),
    },
    {
      given: 'a DOCX that declares 1 000 bytes for a part that inflates to 200 MB',
      bytes: () => docxBomb(200, 1000),
      type: DOCX_TYPE,
      want: 'The DOCX document inflates to more than 128 MiB; at most 128 MiB can be read.',
    },
    {
      given: 'a DOCX of 20 003 parts',
      bytes: () => docx('Hello', 20_000),
      type: DOCX_TYPE,
      want: 'The DOCX document has 20 003 parts; at most 10 000 can be read.',
    },
    {
      given: 'HTML of 100 000 nested divs',
      bytes: () => nestedHtml(100_000),
      type: 'text/html',
      want: 'The HTML document nests elements more than 256 deep; at most 256 levels can be read.',
    },
    {
      given: 'a 0.5 MB PDF whose one stream inflates to 500 MB',
      bytes: () => pdfStreamBomb(500),
      type: 'application/pdf',
      want: 'The PDF inflates to more than 128 MiB; at most 128 MiB can be read.',
    },
    {
      given: 'a PDF of 5 000 pages',
      bytes: () => pdfOfPages(5000),
      type: 'application/pdf',
      want: 'The PDF has 5 000 pages; at most 2 000 can be read.',
    },
    {
      given: 'a PDF whose text operators show 20 million characters',
      bytes: () => pdfOfText(20_000_000),
      type: 'application/pdf',
      want: "The document's text has more than 2 000 000 characters; at most 2 000 000 can be stored.",
    },
    {
      given: 'a 20 KB JSON document nested 10 000 deep (100 million characters pretty-printed)',
      bytes: () => Buffer.from(`${'['.repeat(10_000)}${']'.repeat(10_000)}`),
      type: 'application/json',
      want: "The document's text has more than 2 000 000 characters; at most 2 000 000 can be stored.",
    },
    {
      given: 'plain text of 2 000 001 characters',
      bytes: () => Buffer.alloc(2_000_001, 'a'),
      type: 'text/plain',
      want: "The document's text has more than 2 000 000 characters; at most 2 000 000 can be stored.",
    },
    {
      given: 'an 80-byte PNG declaring 7000 × 7000 pixels',
      bytes: () => pngHeader(7000, 7000),
      type: 'image/png',
      want: 'The image is 7 000 × 7 000 pixels (49 megapixels); at most 36 megapixels can be read.',
    },
  ])('$given: 422 with a readable message, the document beside it read', async ({ bytes, type, want }) => {
    const [hostile, beside] = await Promise.allSettled([extractor.extract(bytes(), as(type)), extractor.extract(Buffer.from('read all the same'), as('text/plain'))]);
    expect(hostile).toMatchObject({ status: 'rejected', reason: { status: 422, message: want } });
    expect(beside).toEqual({ status: 'fulfilled', value: { text: 'read all the same', pages: null, language: 'und' } });
    await expectSaneDocumentsRead(extractor);
  });
});

describe('limits enforced by stopping the thread', () => {
  it('a parser that never finishes does not hold up other documents', async () => {
    // Without the depth check html-to-text spends minutes on this document.
    const extractor = createExtractor({ limits: { ...DEFAULTS, maxHtmlDepth: 1_000_000 }, logger });
    let settled = false;
    const spinning = extractor
      .extract(nestedHtml(100_000), as('text/html'))
      .catch((error: unknown) => error)
      .finally(() => {
        settled = true;
      });
    expect(await extractor.extract(Buffer.from('next in line'), as('text/plain'))).toEqual({ text: 'next in line', pages: null, language: 'und' });
    await expectSaneDocumentsRead(extractor);
    expect(settled).toBe(false);
    await extractor.close();
    expect(await spinning).toMatchObject({ status: 503, message: 'The AI service is shutting down.' });
  });

  it('is killed by the time limit, and the next document is read', async () => {
    // Long enough for the sane documents below on a loaded machine; html-to-text needs minutes for this one.
    const extractor = extractorWith({ maxHtmlDepth: 1_000_000, timeoutMs: 2000 });
    await expect(extractor.extract(nestedHtml(100_000), as('text/html'))).rejects.toMatchObject({ status: 422, message: 'Reading the document took longer than 2 s.' });
    await expectSaneDocumentsRead(extractor);
  });

  it('a parser that overflows its stack fails its document only', async () => {
    const extractor = extractorWith({ maxHtmlDepth: 1_000_000 });
    await expect(extractor.extract(nestedHtml(20_000), as('text/html'))).rejects.toMatchObject({ status: 422, message: 'The HTML document could not be read.' });
    await expectSaneDocumentsRead(extractor);
  });

  const memory = 'Reading the document needed more than 64 MiB of memory; at most 64 MiB can be used.';
  it.each([
    {
      given: 'a DOCX whose headers lie about a part of 100 MB (memory cap over the inflation check)',
      bytes: () => docxBomb(100, 1000),
      type: DOCX_TYPE,
      // Which comes first depends on the machine's pace: the memory cap, or the zip reader
      // noticing the size that does not match its header. Either way the document alone fails.
      want: expect.stringMatching(/^(Reading the document needed more than 64 MiB of memory; at most 64 MiB can be used\.|The DOCX document could not be read\.)$/),
    },
    // 600 000: parsed, they alone hold 64 MiB of heap. 300 000 (32 MiB) passed the cap only with the
    // parse's garbage, and a thread that started faster could finish first and be refused for its text.
    { given: 'JSON of 600 000 objects (18 MB that parse into 64 MiB of heap)', bytes: () => wideJson(600_000), type: 'application/json', want: memory },
    {
      given: 'a PDF whose 300 MB content stream claims to be an image (counted, but under a 1 GiB inflation budget here)',
      bytes: () => pdfStreamBomb(300, true),
      type: 'application/pdf',
      // The cap's check, or an allocation pdf.js cannot make under it, whichever comes first.
      want: expect.stringMatching(/^(Reading the document needed more than 64 MiB of memory; at most 64 MiB can be used\.|The PDF could not be read\.)$/),
    },
  ])('the memory cap stops $given', async ({ bytes, type, want }) => {
    const extractor = extractorWith({ memoryMb: 64, maxInflatedBytes: 1024 ** 3 });
    await expect(extractor.extract(bytes(), as(type))).rejects.toMatchObject({ status: 422, message: want });
    await expectSaneDocumentsRead(extractor);
  });
});

/**
 * The Extractor on documents that are not hostile: every type read in its thread, refusals carried
 * back with their status and message, the queue of threads, and close().
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createExtractor, type Extractor } from '../../src/ai-service/extractor.ts';
import type { ExtractContentType } from '../../src/ai-service/protocol.ts';
import { loadConfig, type ExtractionLimits } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { DOCX_TYPE, docx, pdfWithLargeImage, zip } from '../support/hostile-documents.ts';

const logger = createLogger('silent');
const DEFAULTS = loadConfig({}).ai.extraction;
const fixture = (name: string) => readFileSync(join(import.meta.dirname, '..', 'fixtures', name));
const as = (type: string, charset?: string) => ({ type: type as ExtractContentType, charset });

function extractorWith(limits: Partial<ExtractionLimits> = {}, threads?: number): Extractor {
  const extractor = createExtractor({ limits: { ...DEFAULTS, ...limits }, logger, ...(threads ? { threads } : {}) });
  afterAll(() => extractor.close());
  return extractor;
}

describe('Extractor.extract', () => {
  const extractor = extractorWith();

  it.each([
    {
      given: 'the PDF fixture',
      bytes: fixture('report.pdf'),
      type: 'application/pdf',
      want: { pages: 2, pageStarts: [0, 91], text: expect.stringMatching(/^Annual report of the Northwind cooperative\.\n.*\n\nThe solar array/) },
    },
    { given: 'the DOCX fixture', bytes: fixture('memo.docx'), type: DOCX_TYPE, want: { pages: null, text: expect.stringContaining('Parking permits are issued by the front desk.') } },
    { given: 'a DOCX assembled by hand', bytes: docx('Assembled by hand'), type: DOCX_TYPE, want: { pages: null, text: 'Assembled by hand' } },
    {
      given: 'the HTML fixture',
      bytes: fixture('page.html'),
      type: 'text/html',
      want: { pages: null, text: expect.stringContaining('Seed swap on Saturday'), headings: [{ start: 0, level: 1, text: 'Garden club newsletter' }] },
    },
    { given: 'JSON', bytes: Buffer.from('{"a":[1]}'), type: 'application/json', want: { pages: null, text: '{\n  "a": [\n    1\n  ]\n}' } },
    { given: 'CSV', bytes: fixture('inventory.csv'), type: 'text/csv', want: { pages: null, text: fixture('inventory.csv').toString('utf8').trim() } },
    { given: 'Latin-1 text', bytes: Buffer.from([0x63, 0x61, 0x66, 0xe9]), type: 'text/plain', charset: 'ISO-8859-1', want: { pages: null, text: 'café' } },
    {
      // Flate images are counted now (parser-agreement.test.ts has the 300 MB one refused); one that fits is read.
      given: 'a PDF that paints a 50 MB Flate image',
      bytes: pdfWithLargeImage('A picture of nothing', 50),
      type: 'application/pdf',
      want: { pages: 1, pageStarts: [0], text: 'A picture of nothing' },
    },
  ])('reads $given', async ({ bytes, type, charset, want }) => {
    // With the language it detected (language.ts), tested in test/documents/search-words.test.ts.
    expect(await extractor.extract(bytes, as(type, charset))).toEqual({ ...want, language: expect.any(String) });
  });

  const memo = fixture('memo.docx');
  const prefixed = Buffer.concat([Buffer.from('junk'), memo]);
  it.each([
    { given: 'an unknown charset', bytes: Buffer.from('hi'), type: 'text/plain', charset: 'klingon', want: { status: 415, message: 'The charset "klingon" is not supported.' } },
    { given: 'invalid JSON', bytes: Buffer.from('{"a": '), type: 'application/json', want: { status: 422, message: 'The JSON document is not valid JSON.' } },
    { given: 'bytes that are not a PDF', bytes: Buffer.from('not a pdf'), type: 'application/pdf', want: { status: 422, message: 'The PDF could not be read.' } },
    { given: 'bytes that are not a zip', bytes: Buffer.from('not a zip'), type: DOCX_TYPE, want: { status: 422, message: 'The DOCX document could not be read.' } },
    { given: 'a zip cut short', bytes: memo.subarray(0, 600), type: DOCX_TYPE, want: { status: 422, message: 'The DOCX document could not be read.' } },
    { given: 'a zip with bytes before it', bytes: prefixed, type: DOCX_TYPE, want: { status: 422, message: 'The DOCX document could not be read.' } },
    { given: 'a zip that is not a DOCX', bytes: zip([{ name: 'hello.txt', content: Buffer.from('hello') }]), type: DOCX_TYPE, want: { status: 422, message: 'The DOCX document could not be read.' } },
    { given: 'a ZIP64 archive', bytes: zip64(memo), type: DOCX_TYPE, want: { status: 422, message: 'The DOCX document is a ZIP64 archive, which cannot be read.' } },
  ])('refuses $given with $want.status', async ({ bytes, type, charset, want }) => {
    await expect(extractor.extract(bytes, as(type, charset))).rejects.toMatchObject(want);
  });
});

describe('the character limit', () => {
  const extractor = extractorWith({ maxCharacters: 1000 });

  it.each([
    { given: 'exactly the limit', text: 'a'.repeat(1000), ok: true },
    { given: 'the limit once normalised (control characters and padding dropped)', text: `  ${'a\u0000'.repeat(1000)}  `, ok: true },
    { given: 'one more', text: 'a'.repeat(1001), ok: false },
  ])('$given: ok $ok', async ({ text, ok }) => {
    const result = extractor.extract(Buffer.from(text), as('text/plain'));
    if (ok) expect((await result).text).toHaveLength(1000);
    else await expect(result).rejects.toMatchObject({ status: 422, message: "The document's text has more than 1 000 characters; at most 1 000 can be stored." });
  });
});

describe('threads', () => {
  it('reads more documents than threads, each in turn', async () => {
    const extractor = extractorWith({}, 1);
    const texts = ['one', 'two', 'three', 'four'];
    const results = await Promise.all(texts.map((text) => extractor.extract(Buffer.from(text), as('text/plain'))));
    expect(results.map((result) => result.text)).toEqual(texts);
  });

  it('close() refuses documents waiting for a thread and any after', async () => {
    const extractor = createExtractor({ limits: DEFAULTS, logger, threads: 1 });
    const first = extractor.extract(fixture('report.pdf'), as('application/pdf')).catch((error: unknown) => error);
    const waiting = extractor.extract(Buffer.from('<p>waiting</p>'), as('text/html')).catch((error: unknown) => error);
    await extractor.close();
    expect(await waiting).toMatchObject({ status: 503 });
    expect(await first).toMatchObject({ status: 503 });
    await expect(extractor.extract(Buffer.from('late'), as('text/plain'))).rejects.toMatchObject({ status: 503 });
  });

  it.each([
    ['inline (256 KiB or less)', 1000],
    ['in a thread (over 256 KiB)', 300 * 1024],
  ])('reads plain text %s with the same normalisation and character limit', async (_where, size) => {
    const extractor = extractorWith({ maxCharacters: size - 4 });
    const text = `\uFEFF${'a'.repeat(size - 3)}\r\n`;
    await expect(extractor.extract(Buffer.from(text), as('text/plain'))).rejects.toMatchObject({ status: 422 });
    const fits = extractorWith({ maxCharacters: size - 3 });
    expect(await fits.extract(Buffer.from(text), as('text/plain'))).toEqual({ text: 'a'.repeat(size - 3), pages: null, language: expect.any(String) });
  });

  it('reports the OCR engine for the health report', () => {
    const extractor = extractorWith();
    expect(extractor.ocr).toEqual({ description: expect.stringMatching(/^tesseract\.js \d+\.\d+\.\d+ \(eng\)$/), problem: null });
  });
});

/** The DOCX fixture with its end record's directory offset set to 0xFFFFFFFF, as a ZIP64 archive has it. */
function zip64(archive: Buffer): Buffer {
  const copy = Buffer.from(archive);
  copy.writeUInt32LE(0xffffffff, copy.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06])) + 16);
  return copy;
}

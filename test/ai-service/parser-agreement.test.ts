/**
 * Pre-checks that read the file the way its parser reads it (issue 23, item 2): for each shape of
 * the review, a small generated file that the old check misread is refused with a readable 422,
 * the real parser is shown to read the file the way the check now does (so no case passes
 * vacuously), and the same Extractor reads sane documents afterwards.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compile } from 'html-to-text';
import { afterAll, describe, expect, it } from 'vitest';
import { createExtractor, type Extractor } from '../../src/ai-service/extractor.ts';
import { jpegSize } from '../../src/ai-service/image-header.ts';
import { OcrMemoryError, createOcrEngine } from '../../src/ai-service/ocr.ts';
import type { ExtractContentType } from '../../src/ai-service/protocol.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { DOCX_TYPE, docxBomb, pdf, pdfWithLargeImage, repeatedZlib } from '../support/hostile-documents.ts';
import { FONT, hexOf, jpegHidingItsSize, lzwBomb, nestedLists, pdfOfContent, text, whitePng, zeros } from './parser-agreement-documents.ts';

const logger = createLogger('silent');
const DEFAULTS = loadConfig({}).ai.extraction;
const fixture = (name: string) => readFileSync(join(import.meta.dirname, '..', 'fixtures', name));
const as = (type: string) => ({ type: type as ExtractContentType, charset: undefined });
async function expectSaneDocumentsRead(extractor: Extractor): Promise<void> {
  const [pdfText, word, html] = await Promise.all([
    extractor.extract(fixture('report.pdf'), as('application/pdf')),
    extractor.extract(fixture('memo.docx'), as(DOCX_TYPE)),
    extractor.extract(fixture('page.html'), as('text/html')),
  ]);
  expect(pdfText).toMatchObject({ pages: 2, text: expect.stringContaining('Northwind') });
  expect(word).toMatchObject({ pages: null, text: expect.stringContaining('Harbour Street') });
  expect(html).toMatchObject({ pages: null, text: expect.stringContaining('Garden club newsletter') });
}

describe('the checks read what the parsers read', () => {
  const extractor = createExtractor({ limits: DEFAULTS, logger });
  afterAll(() => extractor.close());

  it('a DOCX whose end record declares 0 entries has every entry checked, as JSZip lists them all', async () => {
    const bomb = docxBomb(200);
    const end = bomb.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
    bomb.writeUInt16LE(0, end + 8);
    bomb.writeUInt16LE(0, end + 10);
    const { default: JSZip } = await import('jszip');
    expect(Object.keys((await JSZip.loadAsync(bomb)).files)).toContain('word/document.xml');
    await expect(extractor.extract(bomb, as(DOCX_TYPE))).rejects.toMatchObject({
      status: 422,
      message: expect.stringMatching(/^The DOCX document's part word\/document\.xml inflates to [\d ]+ times its stored size; at most 100 times can be read\.$/),
    });
    await expectSaneDocumentsRead(extractor);
  });

  it.each([
    { given: 'pdf.js decodes an [/ASCIIHexDecode /FlateDecode] chain', dictionary: '/Filter [/AHx /Fl]', encode: (data: Buffer) => hexOf(repeatedZlib(data, Buffer.alloc(0), 0, Buffer.alloc(0)).data) },
    { given: 'pdf.js decodes LZW', dictionary: '/Filter /LZWDecode', encode: (data: Buffer) => lzwBomb(0, data) },
    { given: 'pdf.js reads a filter name written with #xx escapes', dictionary: '/Filter /Fl#61teDecode', encode: (data: Buffer) => repeatedZlib(data, Buffer.alloc(0), 0, Buffer.alloc(0)).data },
  ])('$given (so the check must count it)', async ({ dictionary, encode }) => {
    expect(await extractor.extract(pdfOfContent(dictionary, encode(text('Read through the chain'))), as('application/pdf'))).toEqual({
      pages: 1,
      pageStarts: [0],
      text: 'Read through the chain',
      language: 'und',
    });
  });

  it.each([
    { given: 'a stream with "/Subtype /Image" in a comment before it', bytes: () => pdfOfContent('% /Subtype /Image\n/Filter /FlateDecode', zeros(300)) },
    { given: 'a 300 MB Flate image (images in Flate are counted)', bytes: () => pdfWithLargeImage('A picture of nothing', 300) },
    { given: 'a [/FlateDecode /FlateDecode] chain', bytes: () => pdfOfContent('/Filter [/FlateDecode /FlateDecode]', repeatedZlib(zeros(300), Buffer.alloc(0), 0, Buffer.alloc(0)).data) },
    { given: 'an [/ASCIIHexDecode /FlateDecode] chain', bytes: () => pdfOfContent('/Filter [/ASCIIHexDecode /FlateDecode]', hexOf(zeros(300))) },
    { given: 'an LZW stream decoding to 300 MB', bytes: () => pdfOfContent('/Filter /LZWDecode', lzwBomb(300)) },
    { given: 'an ASCII85 stream of "z"s (300 MB of zeros)', bytes: () => pdfOfContent('/Filter /A85', Buffer.concat([Buffer.alloc(40_000_000, 'z'), Buffer.from('~>')])) },
    { given: 'a RunLength stream (129-byte runs from 2 bytes)', bytes: () => pdfOfContent('/Filter /RunLengthDecode', Buffer.concat([Buffer.alloc(2_200_000, Buffer.from([129, 0])), Buffer.from([128])])) },
    { given: 'one 1 MB content stream named by 200 pages', bytes: () => pdfOfContent('/Filter /FlateDecode', zeros(1), 200) },
    { given: 'a predictor of 100 000 000 columns', bytes: () => pdfOfContent('/Filter /FlateDecode /DecodeParms << /Predictor 2 /Columns 100000000 /Colors 4 >>', zeros(0.001)) },
  ])('refuses $given: 422, then sane documents read', async ({ bytes }) => {
    await expect(extractor.extract(bytes(), as('application/pdf'))).rejects.toMatchObject({ status: 422, message: 'The PDF inflates to more than 128 MiB; at most 128 MiB can be read.' });
    await expectSaneDocumentsRead(extractor);
  });

  it.each([
    {
      given: 'a content stream coded with DCTDecode',
      bytes: () => pdfOfContent('/Filter /DCTDecode', jpegHidingItsSize()),
      want: 'The PDF has page content or a font coded with the image filter DCTDecode, which cannot be read.',
    },
    {
      given: 'a stream whose filter is an indirect object',
      bytes: () => pdfOfContent('/Filter 4 0 R', zeros(1)),
      want: 'The PDF has a stream whose filters cannot be checked: a filter named by an indirect object.',
    },
  ])('refuses $given', async ({ bytes, want }) => {
    await expect(extractor.extract(bytes(), as('application/pdf'))).rejects.toMatchObject({ status: 422, message: want });
  });

  it('reads a PDF whose DCT image declares 30 000 × 30 000 pixels: pdf.js does not decode images for text', async () => {
    const bytes = pdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> /Contents 4 0 R >>',
      { dictionary: '', stream: Buffer.from('q 612 0 0 792 0 0 cm /Im1 Do Q BT /F1 12 Tf 72 720 Td (A photograph) Tj ET') },
      FONT,
      { dictionary: '/Type /XObject /Subtype /Image /Width 30000 /Height 30000 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode', stream: jpegHidingItsSize() },
    ]);
    expect(await extractor.extract(bytes, as('application/pdf'))).toEqual({ pages: 1, pageStarts: [0], text: 'A photograph', language: 'und' });
  });

  it('a JPEG that shows 1 × 1 behind FF 00 and 30 000 × 30 000 to libjpeg is refused from its real size', async () => {
    expect(jpegSize(jpegHidingItsSize())).toEqual({ width: 30_000, height: 30_000 });
    await expect(extractor.extract(jpegHidingItsSize(), as('image/jpeg'))).rejects.toMatchObject({
      status: 422,
      message: 'The image is 30 000 × 30 000 pixels (900 megapixels); at most 36 megapixels can be read.',
    });
  });

  it('a PNG sent as image/jpeg is refused: Leptonica would decode it as the PNG it is', async () => {
    await expect(extractor.extract(whitePng(10, 10), as('image/jpeg'))).rejects.toMatchObject({ status: 422, message: 'The image is not a readable JPEG file.' });
  });

  it("HTML of 120 nested lists around 100 000 items is read in linear time, where html-to-text's own lists build a huge string", async () => {
    const small = nestedLists(100, 20_000).toString();
    expect(compile({ wordwrap: false, limits: { maxInputLength: Number.MAX_SAFE_INTEGER } })(small).length).toBeGreaterThan(2_000_000);
    const result = await extractor.extract(nestedLists(120, 100_000), as('text/html'));
    expect(result.text.length).toBeLessThan(2_000_000);
    expect(result.text).toContain('* item');
    await expectSaneDocumentsRead(extractor);
  });
});

describe('OCR memory cap', () => {
  const ocr = createOcrEngine(logger, { memoryMb: 100 });
  afterAll(() => ocr.close());
  const scan = fixture('scan.png');
  const TEXT = 'The quarterly revenue grew fourteen percent';

  it('stops a decoder allocation past the cap (a 36-megapixel page), then reads the next image', async () => {
    await expect(ocr.recognize(whitePng(6000, 6000), 60_000)).rejects.toBeInstanceOf(OcrMemoryError);
    expect((await ocr.recognize(scan, 60_000)).trim()).toBe(TEXT);
  });

  it('stops on an aborted signal, queued or running, and reads the next image', async () => {
    await expect(ocr.recognize(scan, 60_000, AbortSignal.abort(new Error('caller went away')))).rejects.toThrow('caller went away');
    const controller = new AbortController();
    const running = ocr.recognize(whitePng(3000, 3000), 60_000, controller.signal);
    setTimeout(() => controller.abort(new Error('caller went away')), 50);
    await expect(running).rejects.toThrow('caller went away');
    expect((await ocr.recognize(scan, 60_000)).trim()).toBe(TEXT);
  });
});

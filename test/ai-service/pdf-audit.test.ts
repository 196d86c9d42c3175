/**
 * The PDF findings of the white-box audit (issue 40): for each class, a small file shows that
 * pdf.js (the copy unpdf bundles, which the extractor runs) reads it as the check now does, and a
 * larger one of the same shape is refused by the check itself with a readable 422, well before the
 * thread's memory or time limit could be what stops it. The budget is small here so the files stay
 * small; the check scales it, as the hostile-document suites show at the default.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, deflateRawSync, deflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { createExtractor } from '../../src/ai-service/extractor.ts';
import { checkPdfStreams } from '../../src/ai-service/pdf-inspection.ts';
import type { ExtractContentType } from '../../src/ai-service/protocol.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { pdf } from '../support/hostile-documents.ts';
import { encryptedPdf, farDistanceFlate, FONT, pdfOfContent, text, zeros } from './parser-agreement-documents.ts';

const MIB = 1024 * 1024;
const BUDGET = 4 * MIB;
const TOO_MUCH = 'The PDF inflates to more than 4 MiB; at most 4 MiB can be read.';
const PAGE = '/Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]';

/** Each page's text as pdf.js gives it, read directly (no check before it). */
async function pdfjsText(bytes: Buffer): Promise<string[]> {
  const { getDocumentProxy } = await import('unpdf');
  const document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  const pages: string[] = [];
  for (let number = 1; number <= document.numPages; number++) {
    const content = await (await document.getPage(number)).getTextContent();
    pages.push(content.items.map((item) => ('str' in item ? item.str : '')).join(''));
  }
  await document.destroy();
  return pages;
}

const refusal = (message: string) => ({ status: 422, message });
const occurrences = (haystack: string, needle: string) => haystack.split(needle).length - 1;

describe('a stream dictionary is read from its object header, as pdf.js reads it', () => {
  // `% obj <<` in a comment: searching back from `stream` for the last `obj` finds the comment's,
  // and reads `<< /Length … >>` from there, a dictionary without the filter.
  const HIDDEN = '/Filter /FlateDecode % obj <<\n';

  it('pdf.js skips the comment and inflates the stream', async () => {
    expect(await pdfjsText(pdfOfContent(HIDDEN, deflateSync(text('Behind a comment'))))).toEqual(['Behind a comment']);
  });

  it('so the check counts it: a bomb behind the comment is refused', async () => {
    await expect(checkPdfStreams(pdfOfContent(HIDDEN, zeros(10)), BUDGET)).rejects.toMatchObject(refusal(TOO_MUCH));
  });

  it('a key that is not a name is skipped, as pdf.js skips it, so the filter after it still counts', async () => {
    const dictionary = '/Q 1 2 /Filter /FlateDecode % obj <<\n';
    expect(await pdfjsText(pdfOfContent(dictionary, deflateSync(text('Skipped key'))))).toEqual(['Skipped key']);
    await expect(checkPdfStreams(pdfOfContent(dictionary, zeros(10)), BUDGET)).rejects.toMatchObject(refusal(TOO_MUCH));
  });

  it('an object header with a comment inside still reads as that object to pdf.js, and its bomb is refused', async () => {
    const file = Buffer.from(pdfOfContent('/Filter /FlateDecode', zeros(10)).toString('latin1').replace('3 0 obj', '3 %c\n0 obj'), 'latin1');
    await expect(checkPdfStreams(file, BUDGET)).rejects.toMatchObject({ status: 422 });
  });
});

describe('encrypted PDFs', () => {
  const encryptedPage = (stream: Buffer) =>
    encryptedPdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      `<< ${PAGE} /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>`,
      { dictionary: '/Filter /FlateDecode', stream },
      FONT,
    ]);

  it('pdf.js opens one with an empty user password without asking, and inflates its streams', async () => {
    expect(await pdfjsText(encryptedPage(deflateSync(text('Locked with nothing'))))).toEqual(['Locked with nothing']);
  });

  it('are refused, since the check would count ciphertext', async () => {
    const want = refusal('The PDF is encrypted, which cannot be checked: encrypted PDFs are refused, even those that open without a password.');
    await expect(checkPdfStreams(encryptedPage(zeros(10)), BUDGET)).rejects.toMatchObject(want);
    await expect(checkPdfStreams(encryptedPage(deflateSync(text('Small'))), BUDGET)).rejects.toMatchObject(want);
  });
});

describe('filters: only those the check can count', () => {
  const brotli = (data: Buffer) => brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 1 } });

  it('pdf.js decodes /BrotliDecode', async () => {
    expect(await pdfjsText(pdfOfContent('/Filter /BrotliDecode', brotli(text('Squeezed by Brotli'))))).toEqual(['Squeezed by Brotli']);
  });

  it('so Brotli is counted: 10 MB of Brotli is refused, and damaged Brotli too', async () => {
    await expect(checkPdfStreams(pdfOfContent('/Filter /BrotliDecode', brotli(Buffer.alloc(10 * 1_000_000))), BUDGET)).rejects.toMatchObject(refusal(TOO_MUCH));
    const cut = brotli(Buffer.from('x'.repeat(100_000) + Math.random())).subarray(0, 20);
    await expect(checkPdfStreams(pdfOfContent('/Filter /BrotliDecode', cut), BUDGET)).rejects.toMatchObject(
      refusal('The PDF has a BrotliDecode stream that is damaged before its end, which cannot be checked.'),
    );
    await expect(checkPdfStreams(pdfOfContent('/Filter /BrotliDecode', brotli(text('fine'))), BUDGET)).resolves.toBeUndefined();
  });

  it('a filter the check does not know is refused, not passed over', async () => {
    await expect(checkPdfStreams(pdfOfContent('/Filter /ZstdDecode', Buffer.from('data')), BUDGET)).rejects.toMatchObject(
      refusal('The PDF has a stream whose filters cannot be checked: the filter /ZstdDecode, which this check does not know.'),
    );
  });
});

describe('Flate data zlib rejects', () => {
  it('pdf.js inflates past a distance too far back (zlib stops at the first byte) and reads the text after it', async () => {
    // 2 000 matches: pdf.js writes 516 000 zeros before the text, which it still finds.
    expect(await pdfjsText(pdfOfContent('/Filter /FlateDecode', farDistanceFlate(2000, text('Past the damage'))))).toEqual(['Past the damage']);
  });

  it('so such a stream is refused, whatever it would inflate to', async () => {
    const want = refusal('The PDF has a FlateDecode stream that is damaged before its end, which cannot be checked.');
    await expect(checkPdfStreams(pdfOfContent('/Filter /FlateDecode', farDistanceFlate(40_000, Buffer.alloc(0))), BUDGET)).rejects.toMatchObject(want);
    // An incomplete Huffman table: a dynamic block whose code lengths do not add up.
    const incomplete = Buffer.concat([Buffer.from([0x78, 0x01]), Buffer.from([0x05, 0xe0, 0xff, 0xff, 0xff, 0xff]), Buffer.alloc(64, 0x55)]);
    await expect(checkPdfStreams(pdfOfContent('/Filter /FlateDecode', incomplete), BUDGET)).rejects.toMatchObject(want);
  });

  it('a window size zlib refuses (pdf.js does not look at it) is inflated and counted', async () => {
    const wide = (data: Buffer) => Buffer.concat([Buffer.from([0x88, 0x1c]), deflateRawSync(data)]);
    expect(await pdfjsText(pdfOfContent('/Filter /FlateDecode', wide(text('Wide window'))))).toEqual(['Wide window']);
    await expect(checkPdfStreams(pdfOfContent('/Filter /FlateDecode', wide(Buffer.alloc(10 * 1_000_000))), BUDGET)).rejects.toMatchObject(refusal(TOO_MUCH));
  });

  it('a stream cut short, or without its checksum, or followed by garbage, is read by both', async () => {
    const whole = deflateSync(Buffer.concat([text('Cut short'), Buffer.from(' '.repeat(2000))]));
    for (const data of [whole.subarray(0, whole.length - 4), Buffer.concat([whole, Buffer.from('garbage')]), whole.subarray(0, whole.length - 12)]) {
      const file = pdfOfContent('/Filter /FlateDecode', data);
      await expect(checkPdfStreams(file, BUDGET)).resolves.toBeUndefined();
      expect(await pdfjsText(file)).toEqual(['Cut short']);
    }
  });

  it('a header pdf.js rejects makes an empty stream for both', async () => {
    const file = pdfOfContent('/Filter /FlateDecode', Buffer.concat([Buffer.from([0x78, 0x00]), zeros(10).subarray(2)]));
    await expect(checkPdfStreams(file, BUDGET)).resolves.toBeUndefined();
    expect(await pdfjsText(file)).toEqual(['']);
  });
});

describe('every use of a stream is weighed', () => {
  /** One page whose /Contents array (direct, or object 6) names stream 3 `times` times. */
  const namedOften = (stream: { dictionary: string; stream: Buffer }, times: number, indirect: boolean) => {
    const array = `[${'3 0 R '.repeat(times)}]`;
    return pdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [4 0 R] /Count 1 >>',
      stream,
      `<< ${PAGE} /Resources << /Font << /F1 5 0 R >> >> /Contents ${indirect ? '6 0 R' : array} >>`,
      FONT,
      indirect ? array : '[]',
    ]);
  };
  const again = () => ({ dictionary: '/Filter /FlateDecode', stream: deflateSync(text('Again ')) });

  it.each([{ indirect: false }, { indirect: true }])('pdf.js reads a stream named 50 times in /Contents 50 times (array indirect: $indirect)', async ({ indirect }) => {
    const [page] = await pdfjsText(namedOften(again(), 50, indirect));
    expect(occurrences(page!, 'Again')).toBe(50);
  });

  it.each([
    { given: 'a 100 KB stream without filters named 10 000 times', stream: () => ({ dictionary: '', stream: Buffer.alloc(100_000, 0x20) }), indirect: false },
    { given: 'a 1 MB Flate stream named 10 000 times by an array object', stream: () => ({ dictionary: '/Filter /FlateDecode', stream: zeros(1) }), indirect: true },
  ])('refuses $given', async ({ stream, indirect }) => {
    await expect(checkPdfStreams(namedOften(stream(), 10_000, indirect), BUDGET)).rejects.toMatchObject(refusal(TOO_MUCH));
  });

  /** A page drawing form 6 `times` times; form 6 draws form 7 `inner` times when `inner` is given. */
  const drawnOften = (form: Buffer, times: number, inner?: { times: number; form: Buffer }) =>
    pdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      `<< ${PAGE} /Resources << /Font << /F1 5 0 R >> /XObject << /Fm1 6 0 R >> >> /Contents 4 0 R >>`,
      { dictionary: '/Filter /FlateDecode', stream: deflateSync(Buffer.from('/Fm1 Do\n'.repeat(times))) },
      FONT,
      {
        dictionary: `/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Filter /FlateDecode /Resources << /Font << /F1 5 0 R >> /XObject << /Fm2 7 0 R >> >>`,
        stream: inner ? deflateSync(Buffer.from('/Fm2 Do\n'.repeat(inner.times))) : form,
      },
      { dictionary: '/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Filter /FlateDecode /Resources << /Font << /F1 5 0 R >> >>', stream: inner?.form ?? deflateSync(Buffer.alloc(0)) },
    ]);

  it('pdf.js reads a form again for each Do that draws it, forms in forms multiplied', async () => {
    const [once] = await pdfjsText(drawnOften(deflateSync(text('Drawn ')), 40));
    expect(occurrences(once!, 'Drawn')).toBe(40);
    const [nested] = await pdfjsText(drawnOften(Buffer.alloc(0), 6, { times: 7, form: deflateSync(text('Nested ')) }));
    expect(occurrences(nested!, 'Nested')).toBe(42);
  });

  it.each([
    { given: 'a 1 MB form drawn 10 000 times', bytes: () => drawnOften(zeros(1), 10_000) },
    { given: 'a 10 KB form drawn 100 times by a form drawn 100 times', bytes: () => drawnOften(Buffer.alloc(0), 100, { times: 100, form: deflateSync(Buffer.alloc(10_000, 0x20)) }) },
  ])('refuses $given', async ({ bytes }) => {
    await expect(checkPdfStreams(bytes(), BUDGET)).rejects.toMatchObject(refusal(TOO_MUCH));
  });

  it('a Do is counted across a comment longer than the chunks content is read in', async () => {
    const file = pdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      `<< ${PAGE} /Resources << /XObject << /Fm1 5 0 R >> >> /Contents 4 0 R >>`,
      { dictionary: '/Filter /FlateDecode', stream: deflateSync(Buffer.from(`/Fm1 %${'c'.repeat(100_000)}\nDo\n`.repeat(10))) },
      { dictionary: '/Subtype /Form /BBox [0 0 1 1] /Filter /FlateDecode', stream: zeros(1) },
    ]);
    await expect(checkPdfStreams(file, BUDGET)).rejects.toMatchObject(refusal(TOO_MUCH));
  });

  it('forms named alike on many pages are not added up: each Do draws one of them', async () => {
    const pages = 50;
    const objects: Array<string | { dictionary: string; stream: Buffer }> = [
      '<< /Type /Catalog /Pages 2 0 R >>',
      `<< /Type /Pages /Kids [${Array.from({ length: pages }, (_, page) => `${4 + page * 3} 0 R`).join(' ')}] /Count ${pages} >>`,
      FONT,
    ];
    for (let page = 0; page < pages; page++) {
      const first = 4 + page * 3;
      objects.push(
        `<< ${PAGE} /Resources << /Font << /F1 3 0 R >> /XObject << /Fm0 ${first + 2} 0 R >> >> /Contents ${first + 1} 0 R >>`,
        { dictionary: '', stream: Buffer.from('/Fm0 Do') },
        { dictionary: '/Subtype /Form /BBox [0 0 612 792] /Filter /FlateDecode', stream: deflateSync(Buffer.alloc(60_000, 0x20)) },
      );
    }
    await expect(checkPdfStreams(pdf(objects), BUDGET)).resolves.toBeUndefined();
  });

  it('forms that draw one another in a cycle are refused', async () => {
    const file = pdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      `<< ${PAGE} /Resources << /XObject << /Fm1 5 0 R >> >> /Contents 4 0 R >>`,
      { dictionary: '', stream: Buffer.from('/Fm1 Do') },
      { dictionary: '/Subtype /Form /BBox [0 0 1 1] /Resources << /XObject << /Fm2 6 0 R >> >>', stream: Buffer.from('/Fm2 Do') },
      { dictionary: '/Subtype /Form /BBox [0 0 1 1] /Resources << /XObject << /Fm1 5 0 R >> >>', stream: Buffer.from('/Fm1 Do') },
    ]);
    await expect(checkPdfStreams(file, BUDGET)).rejects.toMatchObject(refusal('The PDF has forms that draw one another in a cycle, which cannot be checked.'));
  });
});

describe('through the extractor, at the default limits', () => {
  const logger = createLogger('silent');
  const extractor = createExtractor({ limits: loadConfig({}).ai.extraction, logger });
  afterAll(() => extractor.close());
  const as = { type: 'application/pdf' as ExtractContentType, charset: undefined };

  it('a form drawn 200 000 times is refused by the check, and the fixture PDF still reads', async () => {
    const fixture = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'report.pdf'));
    const bomb = pdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      `<< ${PAGE} /Resources << /Font << /F1 5 0 R >> /XObject << /Fm1 6 0 R >> >> /Contents 4 0 R >>`,
      { dictionary: '/Filter /FlateDecode', stream: deflateSync(Buffer.from('/Fm1 Do\n'.repeat(200_000))) },
      FONT,
      { dictionary: '/Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Filter /FlateDecode', stream: deflateSync(text('x '.repeat(500))) },
    ]);
    await expect(extractor.extract(bomb, as)).rejects.toMatchObject(refusal('The PDF inflates to more than 128 MiB; at most 128 MiB can be read.'));
    expect(await extractor.extract(fixture, as)).toMatchObject({ pages: 2, text: expect.stringContaining('Northwind') });
  });
});

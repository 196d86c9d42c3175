import { describe, expect, it } from 'vitest';
import { AiServiceError, createAiClient } from '../../src/ai-service/client.ts';
import { loadConfig } from '../../src/config.ts';
import { fixture, json, serve, settings } from './support.ts';

const DEFAULT_EXTRACTION = settings().extraction;

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

describe('POST /v1/extract', async () => {
  const service = await serve();
  const extract = async (body: Uint8Array | string, contentType?: string) => {
    const response = await fetch(`${service.url}/v1/extract`, {
      method: 'POST',
      headers: contentType === undefined ? {} : { 'content-type': contentType },
      body: typeof body === 'string' ? body : (body as Uint8Array<ArrayBuffer>),
    });
    return { status: response.status, body: await json(response) };
  };

  it('reads every page of a PDF and counts them', async () => {
    const { status, body } = await extract(fixture('report.pdf'), 'application/pdf');
    expect(status).toBe(200);
    expect(body).toEqual({
      text: 'Annual report of the Northwind cooperative.\nMembership rose to 4200 households this year.\n\n' + 'The solar array produced 310 megawatt hours.\nNext year the board plans a second warehouse.',
      pages: 2,
      // Where each page starts in the text: page 2 after page 1 and the blank line between them.
      pageStarts: [0, 91],
      // The text's language (language.ts), ISO 639-3.
      language: 'eng',
    });
    expect(body.text.slice(body.pageStarts[1])).toMatch(/^The solar array/);
  });

  it('reads the paragraphs of a DOCX, runs joined, without pages', async () => {
    const { body } = await extract(fixture('memo.docx'), DOCX);
    expect(body).toEqual({
      text: 'Memo to all staff\n\nThe office moves to Harbour Street in March.\n\nParking permits are issued by the front desk.',
      pages: null,
      language: 'eng',
    });
  });

  it('reads the text of a PNG through OCR, one worker serving calls in turn', async () => {
    const image = fixture('scan.png');
    const results = await Promise.all([extract(image, 'image/png'), extract(image, 'image/png')]);
    for (const { status, body } of results) {
      expect(status).toBe(200);
      expect(body).toEqual({ text: 'The quarterly revenue grew fourteen percent', pages: 1, language: 'eng' });
    }
  });

  it('reads the visible text of HTML, without scripts, styles, images or link URLs', async () => {
    const { body } = await extract(fixture('page.html'), 'text/html; charset=utf-8');
    expect(body.pages).toBeNull();
    for (const wanted of ['Garden club newsletter', 'Tomatoes ripened early this summer & the allotment plots are full.', 'Seed swap on Saturday', 'Beans', '12 kg']) {
      expect(body.text).toContain(wanted);
    }
    for (const unwanted of ['trackingPixel', 'font-family', 'https://', 'photo', 'enable JavaScript', 'GARDEN']) {
      expect(body.text).not.toContain(unwanted);
    }
  });

  it.each([
    { file: 'inventory.csv', type: 'text/csv' },
    { file: 'notes.md', type: 'text/markdown; charset=UTF-8' },
  ])('returns $type as it is', async ({ file, type }) => {
    const headings = file === 'notes.md' ? { headings: [{ start: 0, level: 1, text: 'Meeting notes' }] } : {};
    expect((await extract(fixture(file), type)).body).toEqual({ text: fixture(file).toString('utf8').trim(), pages: null, ...headings, language: expect.any(String) });
  });

  it('pretty-prints JSON, keys next to their values', async () => {
    const { body } = await extract(fixture('catalogue.json'), 'application/json');
    expect(body).toEqual({ text: JSON.stringify(JSON.parse(fixture('catalogue.json').toString('utf8')), null, 2), pages: null, language: expect.any(String) });
    expect(body.text).toContain('"name": "Cliff walk"');
  });

  it('drops the byte order mark, NUL and other control characters, and honours a declared charset', async () => {
    const text = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('first\u0000 line\r\nsecond\tline\u0007\fthird\u001b')]);
    expect((await extract(text, 'text/plain')).body).toEqual({ text: 'first line\nsecond\tline\nthird', pages: null, language: 'und' });
    expect((await extract(Buffer.from([0x63, 0x61, 0x66, 0xe9]), 'text/plain; charset=ISO-8859-1')).body.text).toBe('café');
  });

  it.each([{ type: undefined }, { type: 'application/zip' }, { type: 'image/gif' }, { type: 'text/plain; charset=klingon' }])('answers 415 for Content-Type $type', async ({ type }) => {
    const { status, body } = await extract(Buffer.from('hello'), type);
    expect(status).toBe(415);
    expect(body.error.type).toBe('invalid_request_error');
  });

  const truncatedPng = fixture('scan.png').subarray(0, 200);
  const hugePng = Buffer.from(fixture('scan.png').subarray(0, 33));
  hugePng.writeUInt32BE(100_000, 16);
  hugePng.writeUInt32BE(100_000, 20);
  it.each([
    { why: 'bytes that are not a PDF', bytes: 'not a pdf', type: 'application/pdf', want: 'PDF' },
    { why: 'bytes that are not a DOCX', bytes: 'not a zip', type: DOCX, want: 'DOCX' },
    { why: 'a zip that is not a DOCX', bytes: fixture('memo.docx').subarray(0, 600), type: DOCX, want: 'DOCX' },
    { why: 'invalid JSON', bytes: '{"a": ', type: 'application/json', want: 'JSON' },
    { why: 'bytes that are not a PNG', bytes: 'GIF89a', type: 'image/png', want: 'PNG' },
    { why: 'bytes that are not a JPEG', bytes: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 1, 2, 3]), type: 'image/jpeg', want: 'JPEG' },
    { why: 'a cut-off PNG', bytes: truncatedPng, type: 'image/png', want: 'PNG' },
    { why: 'a PNG declaring 10 gigapixels', bytes: hugePng, type: 'image/png', want: 'megapixels' },
  ])('answers 422 with a readable message for $why', async ({ bytes, type, want }) => {
    const { status, body } = await extract(bytes, type);
    expect(status).toBe(422);
    expect(body).toEqual({ error: { message: expect.stringContaining(want), type: 'invalid_request_error' } });
  });

  it('still reads images after an unreadable one', async () => {
    expect((await extract(fixture('scan.png').subarray(0, 300), 'image/png')).status).toBe(422);
    expect((await extract(fixture('scan.png'), 'image/png')).body.pages).toBe(1);
  });

  it('answers 413 over the limit, declared or streamed', async () => {
    const declared = await extract(new Uint8Array(27 * 1024 * 1024), 'text/plain');
    expect(declared.status).toBe(413);
    const small = await serve({ settings: settings({ extraction: { ...DEFAULT_EXTRACTION, maxBytes: 1000 } }) });
    const chunks = [new Uint8Array(600), new Uint8Array(600)];
    const streamed = await fetch(`${small.url}/v1/extract`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: new ReadableStream({ pull: (controller) => (chunks.length ? controller.enqueue(chunks.shift()!) : controller.close()) }),
      duplex: 'half',
    });
    expect(streamed.status).toBe(413);
    expect((await json(streamed)).error.message).toContain('1000 bytes');
  });

  // The limit follows MAX_UPLOAD_BYTES: a constant 26 MiB refused what a raised MAX_UPLOAD_BYTES
  // let the API store, and every index job of such a document failed (or was retried as if the
  // service were down, when the refusal reached the worker as a reset).
  it('reads every document MAX_UPLOAD_BYTES lets the API store', async () => {
    const maxUploadBytes = 30 * 1024 * 1024;
    const { extraction } = loadConfig({ MAX_UPLOAD_BYTES: String(maxUploadBytes) }).ai;
    expect(extraction.maxBytes).toBeGreaterThanOrEqual(maxUploadBytes);
    const raised = await serve({ settings: settings({ extraction }) });
    const post = (bytes: Uint8Array) => fetch(`${raised.url}/v1/extract`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: bytes });
    // Read, then refused for its text (more characters than MAX_EXTRACTED_CHARACTERS), not for its size.
    const stored = await post(new Uint8Array(maxUploadBytes).fill(0x61));
    expect(stored.status).toBe(422);
    expect((await json(stored)).error.message).toMatch(/characters/);
    const over = await post(new Uint8Array(extraction.maxBytes + 1));
    expect(over.status).toBe(413);
    await over.arrayBuffer();
  });
});

describe('client.extract', async () => {
  const service = await serve({ settings: settings({ extraction: { ...DEFAULT_EXTRACTION, maxBytes: 10_000 } }) });
  const client = createAiClient({ url: service.url });

  it('returns text and pages', async () => {
    expect(await client.extract(fixture('report.pdf'), 'application/pdf')).toMatchObject({ pages: 2, text: expect.stringContaining('Northwind') });
  });

  it.each([
    { bytes: Buffer.from('x'), type: 'application/zip', status: 415, message: "The document's type cannot be read." },
    // A 422 is the service's own words about the document, meant for its owner.
    { bytes: Buffer.from('not a pdf'), type: 'application/pdf', status: 422, message: 'The PDF could not be read.' },
    { bytes: Buffer.alloc(20_000), type: 'text/plain', status: 413, message: 'The document is too large to read.' },
  ])('turns $status into an AiServiceError that is not retryable', async ({ bytes, type, status, message }) => {
    const error = await client.extract(bytes, type).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AiServiceError);
    expect(error).toMatchObject({ retryable: false, status, message });
    expect((error as AiServiceError).detail).toContain(`answered ${status}`);
  });
});

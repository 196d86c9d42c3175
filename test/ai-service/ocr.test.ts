/**
 * OCR limits: the pixel count is checked from the header before the engine sees the image, and a
 * recognition that runs over its time is stopped, its worker replaced for the next image.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createExtractor } from '../../src/ai-service/extractor.ts';
import { OcrTimeoutError, createOcrEngine } from '../../src/ai-service/ocr.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { pngHeader } from '../support/hostile-documents.ts';

const logger = createLogger('silent');
const DEFAULTS = loadConfig({}).ai.extraction;
const scan = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'scan.png'));
const TEXT = 'The quarterly revenue grew fourteen percent';

describe('OCR engine', () => {
  const ocr = createOcrEngine(logger);
  afterAll(() => ocr.close());

  it('stops a recognition that runs over its time, then reads the next image with a fresh worker', async () => {
    await expect(ocr.recognize(scan, 1)).rejects.toBeInstanceOf(OcrTimeoutError);
    expect((await ocr.recognize(scan, 60_000)).trim()).toBe(TEXT);
  });
});

describe('images through the Extractor', () => {
  const slow = createExtractor({ limits: { ...DEFAULTS, ocrTimeoutMs: 1 }, logger });
  const pixels = createExtractor({ limits: { ...DEFAULTS, maxImagePixels: 1_000_000 }, logger });
  afterAll(() => Promise.all([slow.close(), pixels.close()]));

  it('answers 422 when recognition runs over OCR_TIMEOUT_SECONDS', async () => {
    await expect(slow.extract(scan, { type: 'image/png', charset: undefined })).rejects.toMatchObject({ status: 422, message: 'Reading the image took longer than 1 ms.' });
  });

  it.each([
    { given: 'a PNG over the limit', bytes: pngHeader(1001, 1000), want: 'The image is 1 001 × 1 000 pixels (1.001 megapixels); at most 1 megapixel can be read.' },
    { given: 'a PNG declaring 10 gigapixels', bytes: pngHeader(100_000, 100_000), want: 'The image is 100 000 × 100 000 pixels (10 000 megapixels); at most 1 megapixel can be read.' },
  ])('refuses $given from its header', async ({ bytes, want }) => {
    await expect(pixels.extract(bytes, { type: 'image/png', charset: undefined })).rejects.toMatchObject({ status: 422, message: want });
  });

  it('reads an image within the limits', async () => {
    expect(await pixels.extract(scan, { type: 'image/png', charset: undefined })).toEqual({ text: TEXT, pages: 1, language: 'eng' });
  });
});

import { describe, expect, it } from 'vitest';
import { normaliseText } from '../../src/ai-service/extraction.ts';
import { jpegSize, pngSize } from '../../src/ai-service/image-header.ts';
import { fixture } from './support.ts';

describe('normaliseText', () => {
  it.each([
    { given: 'plain', want: 'plain' },
    { given: '  padded \n', want: 'padded' },
    { given: 'a\u0000b', want: 'ab' },
    { given: 'one\r\ntwo\rthree', want: 'one\ntwo\nthree' },
    { given: 'page one\fpage two\vend', want: 'page one\npage two\nend' },
    { given: 'tab\tkept', want: 'tab\tkept' },
    { given: 'bell\u0007 escape\u001b delete\u007f c1\u0085', want: 'bell escape delete c1' },
    { given: 'lone \ud800 surrogate', want: 'lone \ufffd surrogate' },
    { given: 'café 日本 🙂', want: 'café 日本 🙂' },
  ])('$given → $want', ({ given, want }) => {
    expect(normaliseText(given)).toBe(want);
  });
});

/** A JPEG start: SOI, an APP0 segment, then SOF0 with height 480 and width 640. */
const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0xe0, 0x02, 0x80, 0x03]);

describe('image headers', () => {
  it.each([
    { given: 'the PNG fixture', read: () => pngSize(fixture('scan.png')), want: { width: 1188, height: 144 } },
    { given: 'a JPEG with a segment before its frame', read: () => jpegSize(jpeg), want: { width: 640, height: 480 } },
    { given: 'a JPEG cut before its frame', read: () => jpegSize(jpeg.subarray(0, 10)), want: null },
    { given: 'a PNG signature alone', read: () => pngSize(fixture('scan.png').subarray(0, 8)), want: null },
    { given: 'PNG bytes read as JPEG', read: () => jpegSize(fixture('scan.png')), want: null },
  ])('$given', ({ read, want }) => {
    expect(read()).toEqual(want);
  });
});

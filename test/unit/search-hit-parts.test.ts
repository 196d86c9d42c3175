/**
 * The pure parts of search hits and passages, table-driven: a chunk's citation from its columns
 * (chunk-search.ts), documents.text's clamped ranges (text-range.ts), and the CLI's [brackets]
 * around highlights (cli/highlight.ts). The database-backed parts run in test/documents/search-*.
 */
import { describe, expect, it } from 'vitest';
import { markHighlights } from '../../clients/typescript/src/cli/highlight.ts';
import { citationOf } from '../../src/documents/chunk-search.ts';
import { ApiError } from '../../src/contract/errors.ts';
import { checkRange, textRange } from '../../src/documents/text-range.ts';

const none = { startOffset: null, endOffset: null, firstPage: null, lastPage: null, headingPath: null };

describe('citationOf', () => {
  it.each([
    { name: 'no offsets (a chunk from before 0013): no citation', given: none, want: undefined },
    { name: 'offsets only', given: { ...none, startOffset: 10, endOffset: 40 }, want: { start: 10, end: 40 } },
    { name: 'a PDF chunk across pages', given: { ...none, startOffset: 0, endOffset: 120, firstPage: 1, lastPage: 2 }, want: { start: 0, end: 120, pages: { first: 1, last: 2 } } },
    { name: 'a first page without a last one counts as one page', given: { ...none, startOffset: 0, endOffset: 5, firstPage: 3 }, want: { start: 0, end: 5, pages: { first: 3, last: 3 } } },
    { name: 'headings', given: { ...none, startOffset: 5, endOffset: 9, headingPath: ['Guide', 'Birds'] }, want: { start: 5, end: 9, headingPath: ['Guide', 'Birds'] } },
    { name: 'an empty heading path is left out', given: { ...none, startOffset: 5, endOffset: 9, headingPath: [] }, want: { start: 5, end: 9 } },
  ])('$name', ({ given, want }) => {
    expect(citationOf(given)).toEqual(want);
  });
});

describe('textRange', () => {
  const whole = { text: 'héllo wörld', characters: 11, pages: null };
  it.each([
    { given: [0, 5], want: { text: 'héllo', range: { start: 0, end: 5 } } },
    { given: [6, undefined], want: { text: 'wörld', range: { start: 6, end: 11 } } },
    { given: [undefined, 3], want: { text: 'hél', range: { start: 0, end: 3 } } },
    { given: [8, 99], want: { text: 'rld', range: { start: 8, end: 11 } } },
    { given: [99, 100], want: { text: '', range: { start: 11, end: 11 } } },
    { given: [4, 4], want: { text: '', range: { start: 4, end: 4 } } },
  ] as { given: [number | undefined, number | undefined]; want: object }[])('$given', ({ given, want }) => {
    expect(textRange(whole, ...given)).toEqual({ ...whole, ...want });
  });

  it('refuses an end before the start with a 400 naming `end`', () => {
    expect(() => checkRange(5, 4)).toThrow(ApiError);
    try {
      checkRange(5, 4);
    } catch (error) {
      expect(error).toMatchObject({ code: 'BAD_REQUEST', data: { issues: [{ path: ['end'] }] } });
    }
    for (const [start, end] of [
      [4, 5],
      [5, 5],
      [undefined, 0],
      [3, undefined],
    ] as const)
      expect(() => checkRange(start, end)).not.toThrow();
  });
});

describe('markHighlights', () => {
  it.each([
    { given: ['The run is short', [{ start: 4, end: 7 }]], want: 'The [run] is short' },
    {
      given: [
        'runs and runs',
        [
          { start: 0, end: 4 },
          { start: 9, end: 13 },
        ],
      ],
      want: '[runs] and [runs]',
    },
    { given: ['no match', []], want: 'no match' },
    // Out of order, overlapping, empty or past the end: skipped rather than garbled.
    {
      given: [
        'abcdef',
        [
          { start: 2, end: 4 },
          { start: 0, end: 1 },
          { start: 3, end: 5 },
          { start: 5, end: 5 },
          { start: 5, end: 9 },
        ],
      ],
      want: 'ab[cd]ef',
    },
  ] as { given: [string, { start: number; end: number }[]]; want: string }[])('$want', ({ given, want }) => {
    expect(markHighlights(...given)).toBe(want);
  });
});

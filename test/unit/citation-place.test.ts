/**
 * Where the CLI's `search` table says a hit is (cli/citation-place.ts), table-driven; the table
 * itself, with a real PDF's pages, runs in test/cli/documents-jobs.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { citationPlace } from '../../clients/typescript/src/cli/citation-place.ts';

describe('citationPlace', () => {
  it.each([
    { name: 'no citation', given: undefined, want: '' },
    { name: 'a range alone says nothing to look up', given: { start: 0, end: 40 }, want: '' },
    { name: 'one page', given: { start: 0, end: 40, pages: { first: 3, last: 3 } }, want: 'p. 3' },
    { name: 'pages', given: { start: 0, end: 40, pages: { first: 3, last: 4 } }, want: 'pp. 3-4' },
    { name: 'headings, outermost first', given: { start: 5, end: 9, headingPath: ['Guide', 'Birds'] }, want: 'Guide > Birds' },
    { name: 'an empty heading path', given: { start: 5, end: 9, headingPath: [] }, want: '' },
    { name: 'pages and headings', given: { start: 5, end: 9, pages: { first: 1, last: 2 }, headingPath: ['Report'] }, want: 'pp. 1-2, Report' },
  ])('$name', ({ given, want }) => {
    expect(citationPlace(given)).toBe(want);
  });
});

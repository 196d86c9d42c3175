/** placeChunks (src/jobs/chunk-places.ts): each chunk's pages and heading path from its range. */
import { describe, expect, it } from 'vitest';
import { pageAt, placeChunks } from '../../src/jobs/chunk-places.ts';

const span = (start: number, end: number) => ({ text: 'x'.repeat(end - start), start, end });

describe('pageAt', () => {
  it.each([
    { given: 'the first offset', offset: 0, want: 1 },
    { given: 'the last offset of page 1', offset: 9, want: 1 },
    { given: 'the start of page 2', offset: 10, want: 2 },
    // Page 3 is empty: it starts where page 4 starts less the blank line, so its start belongs to it and the rest to page 4.
    { given: 'the start of an empty page', offset: 22, want: 3 },
    { given: 'past the empty page', offset: 24, want: 4 },
    { given: 'the end of the text', offset: 99, want: 4 },
  ])('puts $given on page $want', ({ offset, want }) => {
    expect(pageAt([0, 10, 22, 24], offset)).toBe(want);
  });
});

describe('placeChunks', () => {
  it('names the pages each chunk spans, its last character deciding the last page', () => {
    const places = placeChunks([span(0, 10), span(5, 15), span(10, 30)], [0, 10, 20], null);
    expect(places.map((place) => [place.firstPage, place.lastPage])).toEqual([
      [1, 1],
      [1, 2],
      [2, 3],
    ]);
  });

  it('gives no pages without page starts', () => {
    expect(placeChunks([span(0, 5)], null, null)[0]).toMatchObject({ firstPage: null, lastPage: null, headingPath: null });
    expect(placeChunks([span(0, 5)], [], null)[0]).toMatchObject({ firstPage: null, lastPage: null });
  });

  it('gives each chunk the headings above its start, a heading closing those of its level and deeper', () => {
    const headings = [
      { start: 0, level: 1, text: 'Guide' },
      { start: 20, level: 2, text: 'Birds' },
      { start: 40, level: 3, text: 'Owls' },
      { start: 60, level: 2, text: 'Trees' },
      { start: 80, level: 1, text: 'Index' },
    ];
    const places = placeChunks([span(0, 30), span(25, 50), span(45, 70), span(65, 85), span(85, 90)], null, headings);
    expect(places.map((place) => place.headingPath)).toEqual([['Guide'], ['Guide', 'Birds'], ['Guide', 'Birds', 'Owls'], ['Guide', 'Trees'], ['Index']]);
  });

  it('gives no heading path to a chunk above the first heading', () => {
    expect(placeChunks([span(0, 5), span(10, 20)], null, [{ start: 8, level: 2, text: 'Later' }]).map((place) => place.headingPath)).toEqual([null, ['Later']]);
  });
});

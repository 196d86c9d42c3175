/**
 * The pure rules of full text in every language (issue 24, item 4): CJK runs split into words
 * (search-words.ts), languages mapped to PostgreSQL configurations (text-search-config.ts), and
 * the AI service's language detection on a bounded sample (ai-service/language.ts).
 */
import { describe, expect, it } from 'vitest';
import { cjkWords, searchText } from '../../src/documents/search-words.ts';
import { textSearchConfig } from '../../src/documents/text-search-config.ts';
import { detectLanguage, piecesOf } from '../../src/ai-service/language.ts';

describe('searchText', () => {
  it.each<{ given: string; want: string | null }>([
    // No CJK: null, so the chunk's own text is indexed.
    { given: 'Die alten Häuser der Altstadt.', want: null },
    { given: '', want: null },
    // Words by ICU's dictionary; punctuation inside a run (、) dropped, outside it (，) left as it is.
    { given: '芝公園にある総合電波塔で、人気があります', want: ' 芝公園 に ある 総合 電波 塔 で 人気 が あり ます ' },
    { given: '东京塔，电波塔', want: ' 东京 塔 ， 电波 塔 ' },
    // A Latin word stuck to a CJK run is set apart from it; the rest of the text is untouched.
    { given: 'Visit 東京タワーtoday!', want: 'Visit  東京タワー today!' },
  ])('$given', ({ given, want }) => {
    expect(searchText(given)).toBe(want);
  });

  it('gives each word its range in the run, offset by where the run starts', () => {
    const text = 'xx電波塔';
    const words = cjkWords(text.slice(2), 2);
    expect(words).toEqual([
      { start: 2, end: 4, word: '電波' },
      { start: 4, end: 5, word: '塔' },
    ]);
    for (const word of words) expect(text.slice(word.start, word.end)).toBe(word.word);
  });
});

describe('textSearchConfig', () => {
  it.each<{ given: string | null; want: string }>([
    { given: 'deu', want: 'german' },
    { given: 'fra', want: 'french' },
    { given: 'eng', want: 'english' },
    { given: 'nob', want: 'norwegian' },
    // No configuration: words kept as they are.
    { given: 'cmn', want: 'simple' },
    { given: 'jpn', want: 'simple' },
    { given: 'pol', want: 'simple' },
    // Undetected and texts from before detection: `english`, as they were always indexed.
    { given: 'und', want: 'english' },
    { given: null, want: 'english' },
  ])('$given -> $want', ({ given, want }) => {
    expect(textSearchConfig(given)).toBe(want);
  });
});

describe('detectLanguage', () => {
  it.each<{ given: string; want: string }>([
    { given: 'Die alten Häuser der Altstadt wurden im neunzehnten Jahrhundert gebaut.', want: 'deu' },
    { given: 'Les maisons de la vieille ville ont été construites au dix-neuvième siècle.', want: 'fra' },
    { given: '东京塔是日本东京的一座电波塔，建于一九五八年，高三百三十三米，是东京的地标。', want: 'cmn' },
    { given: '東京タワーは東京都港区芝公園にある総合電波塔で、一九五八年に完成しました。', want: 'jpn' },
    // Too short to tell.
    { given: 'Invoice 2024', want: 'und' },
    { given: '', want: 'und' },
  ])('$want: $given', ({ given, want }) => {
    expect(detectLanguage(given)).toBe(want);
  });

  it('reads bounded pieces from across a long text, and a language must win most of them', () => {
    const german = 'Die alten Häuser der Altstadt wurden im neunzehnten Jahrhundert von Handwerkern aus der Region gebaut und stehen heute unter Denkmalschutz. ';
    const english = 'The old houses of the town were built in the nineteenth century by craftsmen from the region and are protected today. ';
    const pieces = piecesOf(`${german.repeat(2_000)}${english.repeat(2_000)}`);
    expect(pieces).toHaveLength(8);
    for (const piece of pieces) expect(piece.length).toBe(200);
    // Both halves are read, not only the beginning.
    expect(pieces[0]).toContain('Häuser');
    expect(pieces[7]).toContain('houses');
    expect(detectLanguage(german.repeat(20_000))).toBe('deu');
    // Half German, half English: neither wins more than half of the pieces.
    expect(detectLanguage(`${german.repeat(2_000)}${english.repeat(2_000)}`)).toBe('und');
    // Words without the function words that tell a language (as NFCorpus's abstracts are stored): a near tie, not French.
    expect(detectLanguage('role surgery treatment mastalgia pubmed ncbi abstract breast pain common condition affecting women stage reproductive life mastalgia resistant treat')).toBe('und');
  });
});

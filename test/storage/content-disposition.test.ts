/** RFC 6266 Content-Disposition: an ASCII `filename` fallback and the exact name in `filename*`. */
import { describe, expect, it } from 'vitest';
import { contentDisposition, MAX_FILENAME_LENGTH } from '../../src/storage/content-disposition.ts';
import { parseDisposition } from './support.ts';

const long = `${'a'.repeat(300)}.pdf`;
const longEmoji = `${'😀'.repeat(250)}.docx`;

const cases: { name: string; input: string; fallback: string; exact: string }[] = [
  { name: 'plain ASCII', input: 'report.pdf', fallback: 'report.pdf', exact: 'report.pdf' },
  { name: 'spaces and punctuation', input: 'Q3 plan (final) v2!.txt', fallback: 'Q3 plan (final) v2!.txt', exact: 'Q3 plan (final) v2!.txt' },
  { name: 'accents keep their letters (ø does not decompose)', input: 'Résumé Ünïcødé.pdf', fallback: 'Resume Unic_de.pdf', exact: 'Résumé Ünïcødé.pdf' },
  { name: 'CJK', input: '日本語の文書.txt', fallback: '______.txt', exact: '日本語の文書.txt' },
  { name: 'emoji (one code point, one underscore)', input: 'party 🎉.md', fallback: 'party _.md', exact: 'party 🎉.md' },
  { name: 'double quotes', input: 'say "hi".txt', fallback: 'say _hi_.txt', exact: 'say "hi".txt' },
  { name: 'backslashes', input: 'C:\\temp\\x.csv', fallback: 'C:_temp_x.csv', exact: 'C:\\temp\\x.csv' },
  { name: 'percent signs', input: '100% done %41.txt', fallback: '100_ done _41.txt', exact: '100% done %41.txt' },
  { name: 'semicolons and equals', input: 'a;b=c.txt', fallback: 'a;b=c.txt', exact: 'a;b=c.txt' },
  { name: 'apostrophe and star', input: "it's *.txt", fallback: "it's *.txt", exact: "it's *.txt" },
  { name: 'CR LF (header injection)', input: 'a\r\nSet-Cookie: x=1.txt', fallback: 'a__Set-Cookie: x=1.txt', exact: 'a__Set-Cookie: x=1.txt' },
  { name: 'NUL, tab, DEL and C1 controls', input: 'a\u0000b\tc\u007fd\u0085e.txt', fallback: 'a_b_c_d_e.txt', exact: 'a_b_c_d_e.txt' },
  { name: 'lone surrogate', input: 'bad\ud800.txt', fallback: 'bad_.txt', exact: 'bad\ufffd.txt' },
  { name: 'empty', input: '', fallback: 'download', exact: 'download' },
  { name: 'only whitespace', input: '   ', fallback: 'download', exact: 'download' },
  { name: 'very long ASCII keeps its extension', input: long, fallback: `${'a'.repeat(MAX_FILENAME_LENGTH - 4)}.pdf`, exact: `${'a'.repeat(MAX_FILENAME_LENGTH - 4)}.pdf` },
  {
    name: 'very long emoji keeps whole code points and the extension',
    input: longEmoji,
    fallback: `${'_'.repeat(MAX_FILENAME_LENGTH - 5)}.docx`,
    exact: `${'😀'.repeat(MAX_FILENAME_LENGTH - 5)}.docx`,
  },
];

describe('contentDisposition', () => {
  it.each(cases)('$name', ({ input, fallback, exact }) => {
    const header = contentDisposition(input);
    // Only visible ASCII and spaces: always a legal header value.
    expect(header).toMatch(/^[\x20-\x7e]+$/);
    expect(parseDisposition(header)).toEqual({ type: 'attachment', filename: fallback, filenameStar: exact });
  });

  it('writes the documented form', () => {
    expect(contentDisposition('Résumé.pdf')).toBe(`attachment; filename="Resume.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9.pdf`);
    expect(contentDisposition("a'(b)*.txt", 'inline')).toBe(`inline; filename="a'(b)*.txt"; filename*=UTF-8''a%27%28b%29%2A.txt`);
  });

  it('keeps headers bounded whatever the name', () => {
    for (const input of [long.repeat(100), longEmoji.repeat(100), '\u0000'.repeat(10_000)]) {
      expect(contentDisposition(input).length).toBeLessThan(3000);
    }
  });
});

/** Names chosen by users, as every mail template writes them (src/email/user-text.ts). */
import { describe, expect, it } from 'vitest';
import { htmlName, inlineName, MAX_NAME_LENGTH } from '../../src/email/user-text.ts';

describe('inlineName', () => {
  it.each([
    { given: 'Ada Lovelace', want: 'Ada Lovelace' },
    { given: '  Ada\r\nBcc: x@example.com ', want: 'Ada Bcc: x@example.com' },
    { given: 'Ada\tLove\u0000lace\u007f\u0085', want: 'Ada Love lace' },
    { given: 'Ada\u2028Lovelace\u2029', want: 'Ada Lovelace' },
    { given: 'evil\u202egnp.exe', want: 'evilgnp.exe' },
    { given: 'A\u200bd\u2066a\u00ad\ufeff', want: 'Ada' },
    { given: 'family 👨\u200d👩\u200d👧', want: 'family 👨\u200d👩\u200d👧' },
    { given: 'x'.repeat(MAX_NAME_LENGTH), want: 'x'.repeat(MAX_NAME_LENGTH) },
    { given: 'x'.repeat(MAX_NAME_LENGTH + 1), want: 'x'.repeat(MAX_NAME_LENGTH - 1) + '…' },
    { given: 'word '.repeat(40), want: 'word '.repeat(16).trimEnd() + '…' },
    // Cut between characters a reader sees, never inside an emoji's surrogate pair.
    { given: '😀'.repeat(100), want: '😀'.repeat(MAX_NAME_LENGTH - 1) + '…' },
  ])('$given', ({ given, want }) => {
    expect(inlineName(given)).toBe(want);
  });

  it('bounds a name of combining marks, however many one character carries', () => {
    const result = inlineName('a' + '\u0301'.repeat(10_000));
    expect([...result].length).toBeLessThanOrEqual(MAX_NAME_LENGTH);
  });
});

describe('htmlName', () => {
  it.each([
    { given: '<img src=x onerror="alert(1)">', want: '&lt;img src=x onerror=&quot;alert(1)&quot;&gt;' },
    { given: "Tom & Jerry's\nCo", want: 'Tom &amp; Jerry&#39;s Co' },
  ])('$given', ({ given, want }) => {
    expect(htmlName(given)).toBe(want);
  });
});

/**
 * Text that users chose (a person's name, an organization's name) as every mail template puts it
 * in a subject or a body: on one line, without invisible characters, and bounded in length. A
 * sender picks these names, and the recipient may never have heard of them (issue 40: an
 * invitation's subject carried whatever the inviter typed), so a name can neither break the
 * subject or the layout with a line break, nor hide or reorder text with bidirectional controls
 * (U+202E) or zero-width characters, nor fill the mail with a paragraph of its own.
 *
 * The one place for it: src/organizations/invitation-email.ts, src/auth/accounts/emails.ts and the
 * contact form's subject call `inlineName`. The messages are plain text (MailMessage has no HTML
 * body); a template that adds an HTML body puts names in it through `htmlName`.
 */

/** Names are cut to this many characters, the ellipsis included. */
export const MAX_NAME_LENGTH = 80;

const ELLIPSIS = '…';

// Controls (C0, C1, DEL: \n, \r, \t among them), line and paragraph separators: a space each, so
// that words stay apart. Format characters (bidirectional controls, zero-width spaces and joiners,
// the soft hyphen, the BOM) and lone surrogates: dropped. The zero-width joiner is kept, as emoji
// sequences need it and it shows nothing on its own.
const BREAKING = /[\p{Cc}\p{Zl}\p{Zp}]/gu;
const INVISIBLE = /(?!\u200d)[\p{Cf}\p{Cs}]/gu;

// Made at the first name that needs cutting: the segmenter costs about 9 ms to make, which every
// start paid at import (bench/start.ts).
let graphemes: Intl.Segmenter | undefined;

/**
 * A user-chosen name for a subject line or a text body: breaking characters become spaces,
 * invisible ones go, runs of white space become one space, and past MAX_NAME_LENGTH characters
 * (code points) it is cut, on a character boundary that a reader sees, with an ellipsis.
 */
export function inlineName(value: string): string {
  const flat = value.replace(BREAKING, ' ').replace(INVISIBLE, '').replace(/\s+/gu, ' ').trim();
  if ([...flat].length <= MAX_NAME_LENGTH) return flat;
  let kept = '';
  let length = 0;
  graphemes ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  for (const { segment } of graphemes.segment(flat)) {
    // Counted in code points, not graphemes: one grapheme can carry any number of combining marks.
    const size = [...segment].length;
    if (length + size > MAX_NAME_LENGTH - 1) break;
    kept += segment;
    length += size;
  }
  return kept.trimEnd() + ELLIPSIS;
}

/** A user-chosen name for an HTML body: `inlineName`, then escaped for element content and quoted attributes. */
export function htmlName(value: string): string {
  return inlineName(value).replace(/[&<>"']/g, (character) => HTML_ESCAPES[character]!);
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * The headings of an extracted text, for citations (a chunk's heading path, jobs/chunk-places.ts).
 *
 * HTML and DOCX: the h1-h6 formatter of html-to-text and the walk of mammoth's document
 * (extraction.ts) write a mark before and after each heading's text; takeHeadingMarks removes them
 * from the final text and answers where each heading starts. The marks are Unicode noncharacters (U+FDD0-U+FDD6, reserved by Unicode for a program's
 * internal use, never interchanged), taken out of the HTML first so a document cannot forge one.
 * Markdown: ATX headings (`# Title`) outside fenced code blocks, read from the text as it is.
 * DOCX headings are the paragraphs of Word's built-in "heading 1" to "heading 6" styles.
 */
import type { TextHeading } from './protocol.ts';

/** Ends a heading. */
const CLOSE = '\uFDD0';
/** Opens a heading of level 1-6: U+FDD1-U+FDD6. */
export const openMark = (level: number): string => String.fromCharCode(0xfdd0 + level);
export const closeMark = CLOSE;

/** The document's own U+FDD0-U+FDD6, removed before marking so only the marks are marks. */
export function withoutMarks(text: string): string {
  return text.replace(/[\uFDD0-\uFDD6]/g, '');
}

/**
 * The text without the marks (and without the whitespace their removal leaves at its ends), and
 * its headings. An open mark without its close (cannot happen with the formatter) is dropped.
 */
export function takeHeadingMarks(marked: string): { text: string; headings: TextHeading[] } {
  const headings: TextHeading[] = [];
  let text = '';
  let open: { start: number; level: number } | null = null;
  let from = 0;
  for (const match of marked.matchAll(/[\uFDD0-\uFDD6]/g)) {
    text += marked.slice(from, match.index);
    from = match.index + 1;
    const code = match[0].charCodeAt(0) - 0xfdd0;
    if (code > 0) {
      open = { start: text.length, level: code };
    } else if (open) {
      const title = text.slice(open.start).replace(/\s+/g, ' ').trim();
      if (title) headings.push({ start: open.start, level: open.level, text: title });
      open = null;
    }
  }
  text += marked.slice(from);
  const lead = text.length - text.trimStart().length;
  const trimmed = text.trim();
  return {
    text: trimmed,
    headings: headings.map((heading) => ({ ...heading, start: Math.min(Math.max(heading.start - lead, 0), trimmed.length) })),
  };
}

/**
 * Markdown's ATX headings (CommonMark §4.2: up to three spaces, 1-6 `#`, a space or the end; an
 * optional closing run of `#`), skipping fenced code blocks (§4.5), where `#` is a comment.
 * Linear: one pass over the lines.
 */
export function markdownHeadings(text: string): TextHeading[] {
  const headings: TextHeading[] = [];
  let fence: string | null = null;
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end);
    const fenceMatch = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence !== null) {
      if (fenceMatch && fenceMatch[1]![0] === fence[0] && fenceMatch[1]!.length >= fence.length && /^ {0,3}[`~]+\s*$/.test(line)) fence = null;
    } else if (fenceMatch) {
      fence = fenceMatch[1]!;
    } else {
      const heading = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(line);
      const title = heading?.[2]?.replace(/^#+$/, '').trim();
      if (heading && title) headings.push({ start: start + line.indexOf('#'), level: heading[1]!.length, text: title });
    }
    start = end + 1;
  }
  return headings;
}

/** A search hit's text with its highlights marked, for the `search` command's table. */

export interface Range {
  start: number;
  end: number;
}

/**
 * `text` with each range in [brackets]. Brackets rather than terminal styles even on a terminal:
 * the table measures and cuts cells by their characters, and an escape sequence would count as
 * width (or be cut in half). Ranges out of order, overlapping or outside the text are skipped.
 */
export function markHighlights(text: string, ranges: readonly Range[], open = '[', close = ']'): string {
  let marked = '';
  let at = 0;
  for (const { start, end } of ranges) {
    if (start < at || end <= start || end > text.length) continue;
    marked += `${text.slice(at, start)}${open}${text.slice(start, end)}${close}`;
    at = end;
  }
  return marked + text.slice(at);
}

/**
 * How deep an HTML document nests its elements, measured before html-to-text walks it: that
 * library recurses once per level, so 100 000 nested `<div>`s run for minutes and end in a stack
 * overflow. The measure uses htmlparser2's streaming Parser, the tokenizer html-to-text builds its
 * tree with, so void elements and implied closes (`<p>` closing an open `<p>`, `</ul>` closing its
 * `<li>`s) count exactly as they will in that tree; it runs in linear time and stops at the limit.
 */
import { refusals } from './refusals.ts';

/** Refuses HTML whose elements nest deeper than `maxDepth`. */
export async function checkHtmlDepth(html: string, maxDepth: number): Promise<void> {
  const { Parser } = await import('htmlparser2');
  const tooDeep = refusals.depth(maxDepth);
  let depth = 0;
  const parser = new Parser({
    onopentag: () => {
      // Thrown through the tokenizer: the rest of the document is not worth reading.
      if (++depth > maxDepth) throw tooDeep;
    },
    onclosetag: () => {
      depth -= 1;
    },
  });
  parser.end(html);
}

/** Where a search hit sits in its document, for the `search` command's table: its pages and the headings above it. */
import type { components } from '../types.ts';

type Citation = components['schemas']['Citation'];

/**
 * `p. 3` or `pp. 3-4`, then the heading path outermost first (`Guide > Birds`), joined by `, `;
 * empty when the hit has no citation (chunks indexed before documents recorded one) or the
 * citation has neither pages nor headings (plain text without headings): the range alone says
 * nothing a reader can look up.
 */
export function citationPlace(citation: Citation | undefined): string {
  if (!citation) return '';
  const parts: string[] = [];
  const pages = citation.pages;
  if (pages) parts.push(pages.first === pages.last ? `p. ${pages.first}` : `pp. ${pages.first}-${pages.last}`);
  if (citation.headingPath?.length) parts.push(citation.headingPath.join(' > '));
  return parts.join(', ');
}

/**
 * Where each chunk of a document sits, for citations (issue 24): its range in the extracted text
 * (chunking.ts), the PDF pages that range spans (from the page starts /v1/extract answered) and
 * the headings it sits under (the headings above its start, each closing the ones of its level
 * and deeper). Linear in chunks + pages + headings: the chunks come in text order.
 */
import type { TextHeading } from '../ai-service/protocol.ts';
import type { ChunkSpan } from './chunking.ts';

export interface ChunkPlace extends ChunkSpan {
  /** 1-based, null when the text has no page starts. */
  firstPage: number | null;
  lastPage: number | null;
  /** Outermost first; null when no heading is above the chunk. */
  headingPath: string[] | null;
}

export function placeChunks(spans: readonly ChunkSpan[], pageStarts: readonly number[] | null, headings: readonly TextHeading[] | null): ChunkPlace[] {
  const path: TextHeading[] = [];
  let nextHeading = 0;
  return spans.map((span) => {
    while (headings && nextHeading < headings.length && headings[nextHeading]!.start <= span.start) {
      const heading = headings[nextHeading++]!;
      while (path.length > 0 && path[path.length - 1]!.level >= heading.level) path.pop();
      path.push(heading);
    }
    const pages = pageStarts && pageStarts.length > 0;
    return {
      ...span,
      firstPage: pages ? pageAt(pageStarts, span.start) : null,
      lastPage: pages ? pageAt(pageStarts, Math.max(span.end - 1, span.start)) : null,
      headingPath: path.length > 0 ? path.map((heading) => heading.text) : null,
    };
  });
}

/** The 1-based page holding `offset`: the last page starting at or before it (binary search). */
export function pageAt(pageStarts: readonly number[], offset: number): number {
  let low = 0;
  let high = pageStarts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (pageStarts[middle]! <= offset) low = middle;
    else high = middle - 1;
  }
  return low + 1;
}

/**
 * documents.text with `start`/`end`: the part of the extracted text a client shows around a
 * search hit (its `citation` gives the offsets). Offsets are UTF-16 code units, as JavaScript
 * string indexes and as the chunks' citations record them; clamped to the text, so a client may
 * widen a citation by a margin without knowing the text's length.
 */
import type { components } from '../../generated/types.ts';
import { badRequest } from '../contract/errors.ts';
import type { DocumentText } from './text-store.ts';

export type TextRange = components['schemas']['TextRange'];

/** A 400 when `end` comes before `start` (both given): no clamping makes sense of that. */
export function checkRange(start: number | undefined, end: number | undefined): void {
  if (start !== undefined && end !== undefined && end < start) {
    throw badRequest([{ path: ['end'], message: 'must not be less than start', params: { start } }]);
  }
}

/** The text's part from `start` to `end` (either may be left out), clamped to the text. */
export function textRange(whole: DocumentText, start: number | undefined, end: number | undefined): DocumentText & { range: TextRange } {
  const length = whole.text.length;
  const from = Math.min(start ?? 0, length);
  const to = Math.max(from, Math.min(end ?? length, length));
  return { ...whole, text: whole.text.slice(from, to), range: { start: from, end: to } };
}

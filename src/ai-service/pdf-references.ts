/**
 * How often each stream object is used where pdf.js decodes it for text: once per reference under
 * /Contents (a page's content, or an entry of its /Contents array, which pdf.js decodes again for
 * each: one content stream referenced by 10 000 pages is read 10 000 times), and whether it is a
 * font program (/FontFile, /FontFile2, /FontFile3), which pdf.js decodes whatever its filter.
 *
 * Every name in the bytes is looked at, #xx escapes decoded (`/Cont#65nts` is /Contents to pdf.js),
 * and each is read on its own, with no state carried from one to the next: binary data, an
 * unbalanced string or a comment before it cannot hide a reference. A reference inside a string or
 * comment is counted too; counting too many uses is the safe side.
 */
import { isRegular } from './pdf-syntax.ts';

export interface StreamUses {
  /** Object number → references under /Contents. */
  contents: Map<number, number>;
  /** Object numbers referenced as font programs. */
  fonts: Set<number>;
}

export function emptyUses(): StreamUses {
  return { contents: new Map(), fonts: new Set() };
}

const SLASH = 0x2f;
const WANTED = new Set(['Contents', 'FontFile', 'FontFile2', 'FontFile3']);
/** No wanted name is longer, escapes included. */
const LONGEST_NAME = 3 * 'FontFile2'.length;

/** Adds the uses found in `bytes[from, to)`; linear: an array of references is read once, from its own name. */
export function scanUses(bytes: Uint8Array, uses: StreamUses, from = 0, to = bytes.length): void {
  for (let at = bytes.indexOf(SLASH, from); at >= 0 && at < to; at = bytes.indexOf(SLASH, at + 1)) {
    const name = readName(bytes, at + 1, to);
    if (!name || !WANTED.has(name.name)) continue;
    let cursor = skipSpace(bytes, name.end, to);
    const isArray = bytes[cursor] === 0x5b;
    if (isArray) cursor += 1;
    for (;;) {
      const ref = readRef(bytes, cursor, to);
      if (!ref) break;
      if (name.name === 'Contents') uses.contents.set(ref.num, (uses.contents.get(ref.num) ?? 0) + 1);
      else uses.fonts.add(ref.num);
      cursor = ref.end;
      if (!isArray) break;
    }
  }
}

function readName(bytes: Uint8Array, at: number, to: number): { name: string; end: number } | null {
  let name = '';
  const start = at;
  while (at < to && isRegular(bytes[at])) {
    if (at - start > LONGEST_NAME) return null;
    const hex = bytes[at] === 0x23 ? Number.parseInt(String.fromCharCode(bytes[at + 1] ?? 0, bytes[at + 2] ?? 0), 16) : Number.NaN;
    if (Number.isNaN(hex)) {
      name += String.fromCharCode(bytes[at]!);
      at += 1;
    } else {
      name += String.fromCharCode(hex);
      at += 3;
    }
  }
  return { name, end: at };
}

function skipSpace(bytes: Uint8Array, at: number, to: number): number {
  while (at < to) {
    const byte = bytes[at]!;
    if (byte === 0x25) while (at < to && bytes[at] !== 0x0a && bytes[at] !== 0x0d) at += 1;
    else if (byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09 || byte === 0x0c || byte === 0x00) at += 1;
    else break;
  }
  return at;
}

/** `num gen R` at `at` (after whitespace), or null. */
function readRef(bytes: Uint8Array, at: number, to: number): { num: number; end: number } | null {
  const digits = (from: number) => {
    let end = from;
    while (end < to && bytes[end]! >= 0x30 && bytes[end]! <= 0x39 && end - from < 10) end += 1;
    return end > from && !isRegular(bytes[end]) ? end : -1;
  };
  const numStart = skipSpace(bytes, at, to);
  const numEnd = digits(numStart);
  if (numEnd < 0) return null;
  const genEnd = digits(skipSpace(bytes, numEnd, to));
  if (genEnd < 0) return null;
  const r = skipSpace(bytes, genEnd, to);
  if (bytes[r] !== 0x52 || isRegular(bytes[r + 1])) return null;
  return { num: Number(Buffer.from(bytes.buffer, bytes.byteOffset + numStart, numEnd - numStart).toString('latin1')), end: r + 1 };
}

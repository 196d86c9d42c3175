/**
 * What the names in a PDF's bytes say about how often pdf.js decodes each stream for text:
 * - references under /Contents: a page's content, or an entry of its /Contents array, which pdf.js
 *   decodes again for each (one stream named 10 000 times is read 10 000 times);
 * - font programs (/FontFile, /FontFile2, /FontFile3), which pdf.js decodes whatever their filter;
 * - names bound to form XObjects (`/Fm1 6 0 R`) and, in content, `/Fm1 Do`: pdf.js reads a form's
 *   content again for each `Do` that draws it (pdf-forms.ts weighs them);
 * - `/Encrypt`, the trailer's encryption dictionary.
 *
 * Every name in the bytes is looked at, #xx escapes decoded (`/Cont#65nts` is /Contents to pdf.js),
 * and each is read on its own, with no state carried from one to the next: binary data, an
 * unbalanced string or a comment before it cannot hide a reference. A reference inside a string or
 * comment is counted too; counting too many uses is the safe side.
 */
import { isRegular } from './pdf-syntax.ts';
import { refusals } from './refusals.ts';

export interface StreamUses {
  /** Object number → references under /Contents. */
  contents: Map<number, number>;
  /** Object numbers referenced as font programs. */
  fonts: Set<number>;
  /** Whether an `/Encrypt` name was seen. */
  encrypted: boolean;
  /** Form XObjects' object numbers, known before the decoded streams are read. */
  forms: Set<number>;
  /** Name → the forms it is bound to somewhere (`/Fm1 6 0 R`), in any resource dictionary. */
  bindings: Map<string, Set<number>>;
  /** Entries in `bindings`, together. */
  bound: number;
}

export function emptyUses(): StreamUses {
  return { contents: new Map(), fonts: new Set(), encrypted: false, forms: new Set(), bindings: new Map(), bound: 0 };
}

/** Names bound to forms, and `Do`s counted, past which the check refuses rather than use more memory. */
export const MAX_NAMED_USES = 200_000;

const SLASH = 0x2f;
const FONT_FILES = new Set(['FontFile', 'FontFile2', 'FontFile3']);

/**
 * Adds the uses found in `bytes[from, to)`, and `/Name Do` operators to `draws`; linear: an array
 * of references is read once, from its own name. Answers where the first name starts whose reading
 * ran into `to` (or `to`), so a caller reading chunks can read it again with what follows; at the
 * end of the data (`atEnd`) nothing runs into it.
 */
export function scanUses(bytes: Uint8Array, uses: StreamUses, from = 0, to = bytes.length, draws?: Map<string, number>, atEnd = true): number {
  let pending = to;
  const cut = (at: number) => !atEnd && at >= to;
  for (let at = bytes.indexOf(SLASH, from); at >= 0 && at < to; at = bytes.indexOf(SLASH, at + 1)) {
    const name = readName(bytes, at + 1, to);
    let cursor = skipSpace(bytes, name.end, to);
    if (cut(cursor + 2)) {
      pending = Math.min(pending, at);
      continue;
    }
    if (name.name === 'Encrypt') uses.encrypted = true;
    if (draws && bytes[cursor] === 0x44 && bytes[cursor + 1] === 0x6f && !isRegular(bytes[cursor + 2])) {
      draws.set(name.name, (draws.get(name.name) ?? 0) + 1);
      if (draws.size > MAX_NAMED_USES) throw refusals.pdfUncheckable(`its content draws more than ${MAX_NAMED_USES} different names`);
      continue;
    }
    const isArray = name.name === 'Contents' && bytes[cursor] === 0x5b;
    if (isArray) cursor += 1;
    for (;;) {
      const ref = readRef(bytes, cursor, to, atEnd);
      if (ref === 'cut') {
        pending = Math.min(pending, at);
        break;
      }
      if (!ref) break;
      if (name.name === 'Contents') uses.contents.set(ref.num, (uses.contents.get(ref.num) ?? 0) + 1);
      else if (FONT_FILES.has(name.name)) uses.fonts.add(ref.num);
      else if (uses.forms.has(ref.num)) bind(uses, name.name, ref.num);
      cursor = ref.end;
      if (!isArray) break;
    }
  }
  return pending;
}

function bind(uses: StreamUses, name: string, num: number): void {
  let forms = uses.bindings.get(name);
  if (!forms) uses.bindings.set(name, (forms = new Set()));
  if (forms.has(num)) return;
  forms.add(num);
  uses.bound += 1;
  if (uses.bound > MAX_NAMED_USES) throw refusals.pdfUncheckable(`it binds names to forms more than ${MAX_NAMED_USES} times`);
}

/** A name as pdf.js's lexer reads it, #xx escapes decoded. */
function readName(bytes: Uint8Array, at: number, to: number): { name: string; end: number } {
  let name = '';
  while (at < to && isRegular(bytes[at])) {
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

/** `num gen R` at `at` (after whitespace), null, or 'cut' when the bytes end before it can be told (unless `atEnd`). */
function readRef(bytes: Uint8Array, at: number, to: number, atEnd: boolean): { num: number; end: number } | null | 'cut' {
  let cut = false;
  const reach = (end: number) => {
    if (!atEnd && end >= to) cut = true;
    return end;
  };
  const digits = (from: number) => {
    let end = from;
    while (end < to && bytes[end]! >= 0x30 && bytes[end]! <= 0x39 && end - from < 10) end += 1;
    reach(end);
    return end > from && !isRegular(bytes[end]) ? end : -1;
  };
  const numStart = reach(skipSpace(bytes, at, to));
  const numEnd = digits(numStart);
  if (numEnd < 0) return cut ? 'cut' : null;
  const genEnd = digits(reach(skipSpace(bytes, numEnd, to)));
  if (genEnd < 0) return cut ? 'cut' : null;
  const r = reach(skipSpace(bytes, genEnd, to));
  reach(r + 1);
  if (cut) return 'cut';
  if (bytes[r] !== 0x52 || isRegular(bytes[r + 1])) return null;
  return { num: Number(Buffer.from(bytes.buffer, bytes.byteOffset + numStart, numEnd - numStart).toString('latin1')), end: r + 1 };
}

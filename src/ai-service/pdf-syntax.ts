/**
 * Enough of PDF's object syntax (PDF 32000-1:2008, 7.2 and 7.3) to read a stream's dictionary the
 * way pdf.js's Lexer and Parser read it: comments skipped, literal strings balanced with their
 * escapes, names with their #xx escapes decoded (`/Fl#61teDecode` is /FlateDecode to pdf.js),
 * indirect references kept as references. Used on the bytes between an object's `obj` keyword and
 * its `stream` keyword only, so a reading never runs past one object.
 */

export type PdfValue =
  | { kind: 'name'; name: string }
  | { kind: 'number'; value: number }
  | { kind: 'ref'; num: number; gen: number }
  | { kind: 'dict'; entries: Map<string, PdfValue> }
  | { kind: 'array'; items: PdfValue[] }
  | { kind: 'keyword'; word: string }
  /** A string, whose content no check needs. */
  | { kind: 'other' };

/** Thrown when the bytes are not one well-formed object. */
export class PdfSyntaxError extends Error {
  override name = 'PdfSyntaxError';
}

const WHITESPACE = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);
const DELIMITERS = new Set([0x28, 0x29, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d, 0x2f, 0x25]);

export function isRegular(byte: number | undefined): boolean {
  return byte !== undefined && !WHITESPACE.has(byte) && !DELIMITERS.has(byte);
}

/**
 * The single object in `bytes[from, to)`, with only whitespace and comments around it; throws
 * PdfSyntaxError otherwise. Iterative over nesting, so a deep dictionary cannot overflow the stack.
 */
export function parseSingleObject(bytes: Uint8Array, from: number, to: number): PdfValue {
  const reader = new Reader(bytes, from, to);
  const value = reader.value();
  reader.skipSpace();
  if (reader.at !== to) throw new PdfSyntaxError('more than one object');
  return value;
}

class Reader {
  private readonly bytes: Uint8Array;
  private readonly to: number;
  at: number;
  constructor(bytes: Uint8Array, at: number, to: number) {
    this.bytes = bytes;
    this.at = at;
    this.to = to;
  }

  skipSpace(): void {
    while (this.at < this.to) {
      const byte = this.bytes[this.at]!;
      if (WHITESPACE.has(byte)) this.at += 1;
      else if (byte === 0x25) while (this.at < this.to && this.bytes[this.at] !== 0x0a && this.bytes[this.at] !== 0x0d) this.at += 1;
      else return;
    }
  }

  value(): PdfValue {
    // Containers under construction; a finished value is added to the innermost one.
    const stack: Array<{ dict: Map<string, PdfValue> | null; items: PdfValue[] }> = [];
    for (;;) {
      this.skipSpace();
      if (this.at >= this.to) throw new PdfSyntaxError('unexpected end');
      const byte = this.bytes[this.at]!;
      let done: PdfValue | null = null;
      if (byte === 0x3c && this.bytes[this.at + 1] === 0x3c) {
        this.at += 2;
        stack.push({ dict: new Map(), items: [] });
      } else if (byte === 0x5b) {
        this.at += 1;
        stack.push({ dict: null, items: [] });
      } else if ((byte === 0x3e && this.bytes[this.at + 1] === 0x3e) || byte === 0x5d) {
        const open = stack.pop();
        if (!open || (byte === 0x5d) !== (open.dict === null)) throw new PdfSyntaxError('unbalanced');
        this.at += byte === 0x5d ? 1 : 2;
        if (open.dict) {
          if (open.items.length % 2) throw new PdfSyntaxError('dictionary without a value');
          for (let index = 0; index < open.items.length; index += 2) {
            const key = open.items[index]!;
            if (key.kind !== 'name') throw new PdfSyntaxError('dictionary key is not a name');
            open.dict.set(key.name, open.items[index + 1]!);
          }
          done = { kind: 'dict', entries: open.dict };
        } else {
          done = { kind: 'array', items: open.items };
        }
      } else {
        done = this.scalar();
      }
      if (done === null) continue;
      const top = stack.at(-1);
      if (!top) return done;
      // `num gen R` becomes one reference, as pdf.js's Parser makes it.
      const items = top.items;
      if (done.kind === 'keyword' && done.word === 'R' && items.length >= 2) {
        const gen = items.at(-1)!;
        const num = items.at(-2)!;
        if (num.kind === 'number' && gen.kind === 'number') {
          items.splice(-2, 2, { kind: 'ref', num: num.value, gen: gen.value });
          continue;
        }
      }
      items.push(done);
    }
  }

  private scalar(): PdfValue {
    const bytes = this.bytes;
    const byte = bytes[this.at]!;
    if (byte === 0x2f) {
      let name = '';
      for (this.at += 1; this.at < this.to && isRegular(bytes[this.at]); this.at += 1) {
        const code = bytes[this.at]!;
        const hex = code === 0x23 ? Number.parseInt(String.fromCharCode(bytes[this.at + 1] ?? 0, bytes[this.at + 2] ?? 0), 16) : Number.NaN;
        if (Number.isNaN(hex)) name += String.fromCharCode(code);
        else {
          name += String.fromCharCode(hex);
          this.at += 2;
        }
      }
      return { kind: 'name', name };
    }
    if (byte === 0x28) {
      let depth = 0;
      for (; this.at < this.to; this.at += 1) {
        const code = bytes[this.at]!;
        if (code === 0x5c) this.at += 1;
        else if (code === 0x28) depth += 1;
        else if (code === 0x29 && --depth === 0) {
          this.at += 1;
          return { kind: 'other' };
        }
      }
      throw new PdfSyntaxError('unterminated string');
    }
    if (byte === 0x3c) {
      const end = bytes.indexOf(0x3e, this.at);
      if (end < 0 || end >= this.to) throw new PdfSyntaxError('unterminated hex string');
      this.at = end + 1;
      return { kind: 'other' };
    }
    if (!isRegular(byte)) throw new PdfSyntaxError(`unexpected ${String.fromCharCode(byte)}`);
    const start = this.at;
    while (this.at < this.to && isRegular(bytes[this.at])) this.at += 1;
    const token = Buffer.from(bytes.buffer, bytes.byteOffset + start, this.at - start).toString('latin1');
    if (/^[+-]?(\d+\.?\d*|\.\d+)$/.test(token)) return { kind: 'number', value: Number(token) };
    return { kind: 'keyword', word: token };
  }
}

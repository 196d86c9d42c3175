/**
 * PDF's object syntax (PDF 32000-1:2008, 7.2 and 7.3) read token for token the way pdf.js's Lexer
 * and Parser read it (pdf.js src/core/parser.js), leniencies included, so a check sees the
 * dictionary pdf.js sees: comments skipped, literal strings balanced with their escapes, names
 * with their #xx escapes decoded (`/Fl#61teDecode` is /FlateDecode), `12abc` read as the number 12
 * and the command `abc`, a dictionary key that is not a name skipped as one token, and a `>>` or
 * `]` where a value is expected taken as that value (pdf.js's getObj returns the command).
 * Iterative over nesting, so a deep dictionary cannot overflow the stack.
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
  /** Where reading stopped, for a caller that bounds the work of many reads. */
  at = 0;
}

/** Thrown for an inline image (`BI`) inside an object, which pdf.js reads to its `EI` with rules of its own. */
export class PdfInlineImageError extends PdfSyntaxError {
  override name = 'PdfInlineImageError';
}

const WHITESPACE = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);
const DELIMITERS = new Set([0x28, 0x29, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d, 0x2f, 0x25]);

export function isRegular(byte: number | undefined): boolean {
  return byte !== undefined && !WHITESPACE.has(byte) && !DELIMITERS.has(byte);
}

const hexDigit = (byte: number | undefined): number => {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte & 15;
  if ((byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)) return (byte & 15) + 9;
  return -1;
};

type Token = PdfValue | { kind: 'command'; word: string } | { kind: 'eof' };

/**
 * The object that starts at `from` (after whitespace and comments), read no further than `to`,
 * and where reading stopped: just past the object, or at the token after it when that token is
 * `stream` (`streamAt` then says where the keyword starts), as pdf.js's Parser looks one token
 * ahead to tell a stream from a dictionary. Throws PdfSyntaxError where pdf.js's Parser throws.
 */
export function parseObjectAt(bytes: Uint8Array, from: number, to = bytes.length): { value: PdfValue; end: number; streamAt: number | null } {
  const lexer = new Lexer(bytes, from, to);
  try {
    const value = readValue(lexer);
    lexer.skipSpace();
    const streamAt = lexer.at;
    const next = lexer.token();
    return next.kind === 'command' && next.word === 'stream' ? { value, end: lexer.at, streamAt } : { value, end: streamAt, streamAt: null };
  } catch (error) {
    if (error instanceof PdfSyntaxError) error.at = lexer.at;
    throw error;
  }
}

/** The single object in `bytes[from, to)`, with only whitespace and comments around it; throws PdfSyntaxError otherwise. */
export function parseSingleObject(bytes: Uint8Array, from: number, to: number): PdfValue {
  const lexer = new Lexer(bytes, from, to);
  const value = readValue(lexer);
  lexer.skipSpace();
  if (lexer.at !== to) throw new PdfSyntaxError('more than one object');
  return value;
}

interface Open {
  dict: boolean;
  items: PdfValue[];
  /** A dictionary's key waiting for its value. */
  key: string | null;
  entries: Map<string, PdfValue>;
}

/** pdf.js's Parser.getObj, with an explicit stack for arrays and dictionaries. */
function readValue(lexer: Lexer): PdfValue {
  const stack: Open[] = [];
  let pending: Token | null = null;
  const next = (): Token => {
    const token = pending ?? lexer.token();
    pending = null;
    return token;
  };
  for (;;) {
    const top = stack.at(-1);
    const token = next();
    if (token.kind === 'eof') throw new PdfSyntaxError(top ? 'end of file inside an object' : 'no object');
    // A dictionary key: anything but a name is skipped as a single token, `>>` closes.
    if (top?.dict && top.key === null) {
      if (token.kind === 'command' && token.word === '>>') {
        stack.pop();
        if (finish(stack, { kind: 'dict', entries: top.entries })) return { kind: 'dict', entries: top.entries };
      } else if (token.kind === 'name') {
        top.key = token.name;
      }
      continue;
    }
    if (top && !top.dict && token.kind === 'command' && token.word === ']') {
      stack.pop();
      if (finish(stack, { kind: 'array', items: top.items })) return { kind: 'array', items: top.items };
      continue;
    }
    let value: PdfValue;
    if (token.kind === 'command') {
      if (token.word === '[' || token.word === '<<') {
        stack.push({ dict: token.word === '<<', items: [], key: null, entries: new Map() });
        continue;
      }
      if (token.word === 'BI') throw new PdfInlineImageError('inline image inside an object');
      value = { kind: 'keyword', word: token.word };
    } else if (token.kind === 'number' && Number.isInteger(token.value)) {
      // `num gen R` is one reference; otherwise the tokens read ahead are kept for what follows.
      const gen = lexer.token();
      if (gen.kind === 'number' && Number.isInteger(gen.value)) {
        const mark = lexer.at;
        const r = lexer.token();
        if (r.kind === 'command' && r.word === 'R') value = { kind: 'ref', num: token.value, gen: gen.value };
        else {
          lexer.at = mark;
          value = token;
          pending = gen;
        }
      } else {
        value = token;
        pending = gen;
      }
    } else {
      value = token;
    }
    if (finish(stack, value)) return value;
  }
}

/** Adds a finished value to the innermost container; true when there is none (the value is the result). */
function finish(stack: Open[], value: PdfValue): boolean {
  const top = stack.at(-1);
  if (!top) return true;
  if (!top.dict) top.items.push(value);
  else if (top.key !== null) {
    top.entries.set(top.key, value);
    top.key = null;
  }
  return false;
}

class Lexer {
  private readonly bytes: Uint8Array;
  private readonly to: number;
  at: number;
  constructor(bytes: Uint8Array, at: number, to: number) {
    this.bytes = bytes;
    this.at = at;
    this.to = to;
  }

  private byte(offset = 0): number | undefined {
    return this.at + offset < this.to ? this.bytes[this.at + offset] : undefined;
  }

  skipSpace(): void {
    while (this.at < this.to) {
      const byte = this.bytes[this.at]!;
      if (WHITESPACE.has(byte)) this.at += 1;
      else if (byte === 0x25) while (this.at < this.to && this.bytes[this.at] !== 0x0a && this.bytes[this.at] !== 0x0d) this.at += 1;
      else return;
    }
  }

  token(): Token {
    this.skipSpace();
    const byte = this.byte();
    if (byte === undefined) return { kind: 'eof' };
    if ((byte >= 0x30 && byte <= 0x39) || byte === 0x2b || byte === 0x2d || byte === 0x2e) return this.number();
    switch (byte) {
      case 0x28:
        return this.literalString();
      case 0x2f:
        return this.name();
      case 0x5b:
      case 0x5d:
      case 0x7b:
      case 0x7d:
        this.at += 1;
        return { kind: 'command', word: String.fromCharCode(byte) };
      case 0x3c:
      case 0x3e:
        if (this.byte(1) === byte) {
          this.at += 2;
          return { kind: 'command', word: byte === 0x3c ? '<<' : '>>' };
        }
        if (byte === 0x3e) {
          this.at += 1;
          return { kind: 'command', word: '>' };
        }
        return this.hexString();
      case 0x29:
        this.at += 1;
        throw this.error('illegal character )');
    }
    // pdf.js reads a byte outside printable ASCII followed by a printable one as a command of its own.
    const start = this.at;
    this.at += 1;
    const following = this.byte();
    if ((byte < 32 || byte > 127) && following !== undefined && following >= 32 && following <= 127) return { kind: 'command', word: String.fromCharCode(byte) };
    while (isRegular(this.byte())) {
      if (this.at - start === 128) throw this.error('command token too long');
      this.at += 1;
    }
    const word = Buffer.from(this.bytes.buffer, this.bytes.byteOffset + start, this.at - start).toString('latin1');
    return { kind: 'command', word };
  }

  /** pdf.js's Lexer.getNumber: digits and one point, a second leading minus and a minus inside ignored; it stops at any other byte. */
  private number(): Token {
    let byte = this.byte();
    let sign = 1;
    if (byte === 0x2d) {
      sign = -1;
      this.at += 1;
      if (this.byte() === 0x2d) this.at += 1;
    } else if (byte === 0x2b) this.at += 1;
    while (this.byte() === 0x0a || this.byte() === 0x0d) this.at += 1;
    let divideBy = 0;
    if (this.byte() === 0x2e) {
      divideBy = 10;
      this.at += 1;
    }
    byte = this.byte();
    if (byte === undefined || byte < 0x30 || byte > 0x39) {
      if (byte === undefined || WHITESPACE.has(byte) || byte === 0x28 || byte === 0x3c) return { kind: 'number', value: 0 };
      throw this.error('invalid number');
    }
    let value = byte - 0x30;
    for (this.at += 1; (byte = this.byte()) !== undefined; this.at += 1) {
      if (byte >= 0x30 && byte <= 0x39) {
        if (divideBy !== 0) divideBy *= 10;
        value = value * 10 + (byte - 0x30);
      } else if (byte === 0x2e) {
        if (divideBy !== 0) break;
        divideBy = 1;
      } else if (byte !== 0x2d) break;
    }
    return { kind: 'number', value: sign * (divideBy !== 0 ? value / divideBy : value) };
  }

  private literalString(): Token {
    let depth = 0;
    for (; this.at < this.to; this.at += 1) {
      const code = this.bytes[this.at]!;
      if (code === 0x5c) this.at += 1;
      else if (code === 0x28) depth += 1;
      else if (code === 0x29 && --depth === 0) {
        this.at += 1;
        return { kind: 'other' };
      }
    }
    // pdf.js ends an unterminated string at the end of the data.
    return { kind: 'other' };
  }

  private hexString(): Token {
    const end = this.bytes.indexOf(0x3e, this.at);
    this.at = end < 0 || end >= this.to ? this.to : end + 1;
    return { kind: 'other' };
  }

  /** pdf.js's Lexer.getName, #xx escapes and its handling of malformed ones included. */
  private name(): Token {
    let name = '';
    for (this.at += 1; isRegular(this.byte());) {
      const code = this.byte()!;
      this.at += 1;
      if (code !== 0x23) {
        name += String.fromCharCode(code);
        continue;
      }
      const first = this.byte();
      if (!isRegular(first)) {
        name += '#';
        break;
      }
      this.at += 1;
      if (hexDigit(first) < 0) {
        name += `#${String.fromCharCode(first!)}`;
        continue;
      }
      const second = this.byte();
      if (hexDigit(second) < 0) {
        name += `#${String.fromCharCode(first!)}`;
        if (!isRegular(second)) break;
        name += String.fromCharCode(second!);
        this.at += 1;
        continue;
      }
      this.at += 1;
      name += String.fromCharCode((hexDigit(first) << 4) | hexDigit(second));
    }
    return { kind: 'name', name };
  }

  private error(message: string): PdfSyntaxError {
    return new PdfSyntaxError(message);
  }
}

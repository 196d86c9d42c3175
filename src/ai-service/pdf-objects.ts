/**
 * A PDF's streams found the way pdf.js can reach them. pdf.js reads an object from its `N G obj`
 * header, wherever the cross-reference table (or, when that is damaged, its own scan) says it
 * starts, with its lexer: comments and strings skipped. So every `obj` keyword in the file is a
 * place pdf.js may start reading, and each is read here with pdf.js's syntax (pdf-syntax.ts); an
 * object that is a dictionary followed by the `stream` keyword is a stream, with that dictionary.
 * Reading from every `obj`, rather than searching back from `stream` for the last one, means a
 * comment such as `% obj <<` inside a dictionary yields one more candidate, never a wrong one
 * instead of the right one. A stream keyword that no reading reaches but that follows `>>` is
 * refused: pdf.js may see a dictionary this check cannot.
 *
 * The readings may overlap (an `obj` inside an array read from an earlier `obj`), so together they
 * may read at most a few times the file before the PDF is refused, keeping the check linear.
 */
import { PdfInlineImageError, PdfSyntaxError, isRegular, parseObjectAt, type PdfValue } from './pdf-syntax.ts';
import { refusals } from './refusals.ts';

export interface FoundStream {
  /** The object number from a plain `N G obj` header; null when the header is not that plain. */
  num: number | null;
  dictionary: Map<string, PdfValue>;
  /** The data: from past the end of line after `stream` to /Length when it checks out, else to the end of the file. */
  start: number;
  end: number;
}

/** Numbers and arrays, the objects a check looks up (a /Length, a /Contents array), by number: each reading's value. */
export type PlainObjects = Map<number, PdfValue[]>;

function keep(into: PlainObjects, num: number, value: PdfValue): void {
  if (value.kind !== 'number' && value.kind !== 'array') return;
  const values = into.get(num);
  if (values) values.push(value);
  else into.set(num, [value]);
}

const OBJ = Buffer.from('obj');
const STREAM = Buffer.from('stream');
const ENDSTREAM = Buffer.from('endstream');
/** Overlapping readings may read this many times the file, plus a mebibyte, before the PDF is refused. */
const READ_FACTOR = 4;

export function findStreams(buffer: Buffer): { streams: FoundStream[]; objects: PlainObjects } {
  const objects: PlainObjects = new Map();
  const readings: Array<{ num: number | null; dictionary: Map<string, PdfValue>; keyword: number; end: number }> = [];
  const reached = new Set<number>();
  let read = 0;
  const allowance = READ_FACTOR * buffer.length + 1024 * 1024;
  for (let at = buffer.indexOf(OBJ); at >= 0; at = buffer.indexOf(OBJ, at + OBJ.length)) {
    if (isRegular(buffer[at - 1]) || isRegular(buffer[at + OBJ.length])) continue;
    const from = at + OBJ.length;
    const num = headerNumber(buffer, at);
    try {
      const { value, end, streamAt } = parseObjectAt(buffer, from);
      read += end - from;
      if (num !== null) keep(objects, num, value);
      if (streamAt !== null && value.kind === 'dict') {
        readings.push({ num, dictionary: value.entries, keyword: streamAt, end });
        reached.add(streamAt);
      }
    } catch (error) {
      if (error instanceof PdfInlineImageError) throw refusals.pdfStreamDictionary();
      if (!(error instanceof PdfSyntaxError)) throw error;
      read += error.at - from;
    }
    if (read > allowance) throw refusals.pdfUncheckable('its objects overlap one another too much');
  }
  for (let at = buffer.indexOf(STREAM); at >= 0; at = buffer.indexOf(STREAM, at + STREAM.length)) {
    // `stream` as a token of its own (pdf.js's lexer reads "upstream" or "streams" as other words).
    if (isRegular(buffer[at - 1]) || isRegular(buffer[at + STREAM.length])) continue;
    if (!reached.has(at) && endsWithDictionary(buffer, at)) throw refusals.pdfStreamDictionary();
  }
  const streams: FoundStream[] = [];
  for (const reading of readings) {
    const start = dataStart(buffer, reading.end);
    if (start < 0) continue;
    streams.push({ num: reading.num, dictionary: reading.dictionary, start, end: dataEnd(buffer, start, reading.dictionary.get('Length'), objects) });
  }
  return { streams, objects };
}

/** `N G` right before the `obj` keyword, with only whitespace between. */
function headerNumber(buffer: Buffer, obj: number): number | null {
  const header = /(?:^|[^0-9.+-])(\d{1,10})[\s\0]+\d{1,5}[\s\0]+$/.exec(buffer.toString('latin1', Math.max(0, obj - 32), obj));
  return header ? Number(header[1]) : null;
}

function endsWithDictionary(buffer: Buffer, at: number): boolean {
  let end = at;
  while (end > 0 && !isRegular(buffer[end - 1]) && buffer[end - 1] !== 0x3e) end -= 1;
  return end >= 2 && buffer[end - 1] === 0x3e && buffer[end - 2] === 0x3e;
}

/** Past the end of line after the keyword: CR LF, LF or CR, as pdf.js's skipToNextLine. */
function dataStart(buffer: Buffer, from: number): number {
  for (let at = from; at < buffer.length; at++) {
    if (buffer[at] === 0x0a) return at + 1;
    if (buffer[at] === 0x0d) return buffer[at + 1] === 0x0a ? at + 2 : at + 1;
  }
  return -1;
}

/**
 * pdf.js takes /Length (fetching it when it is a reference) when `endstream` follows it, else it
 * searches for `endstream`. A length, direct or the one plain object it names, that checks out is
 * used; otherwise the rest of the file, which holds whatever pdf.js reads (every decoder here gives
 * at least as much from a longer input) and which the decoders end themselves within.
 */
function dataEnd(buffer: Buffer, start: number, length: PdfValue | undefined, objects: PlainObjects): number {
  let value = length;
  if (value?.kind === 'ref') {
    const found = objects.get(value.num);
    value = found?.length === 1 ? found[0] : undefined;
  }
  if (value?.kind === 'number' && Number.isInteger(value.value) && value.value >= 0 && start + value.value <= buffer.length) {
    let at = start + value.value;
    while (at < buffer.length && !isRegular(buffer[at])) at += 1;
    if (buffer.subarray(at, at + ENDSTREAM.length).equals(ENDSTREAM)) return start + value.value;
  }
  return buffer.length;
}

/**
 * The objects an object stream (PDF 32000-1:2008, 7.5.7) holds, by number: its header of
 * `num offset` pairs, each object read at /First + offset as pdf.js reads it.
 */
export function objectStreamObjects(data: Buffer, dictionary: Map<string, PdfValue>, into: Map<number, PdfValue[]>): void {
  const count = dictionary.get('N');
  const first = dictionary.get('First');
  if (count?.kind !== 'number' || first?.kind !== 'number') return;
  const header = data
    .toString('latin1', 0, Math.min(first.value, data.length))
    .trim()
    .split(/[\s\0]+/);
  let read = 0;
  for (let index = 0; index + 1 < header.length && index / 2 < count.value; index += 2) {
    const num = Number(header[index]);
    const at = first.value + Number(header[index + 1]);
    if (!Number.isInteger(num) || !Number.isInteger(at) || at < 0 || at >= data.length) continue;
    try {
      const { value, end } = parseObjectAt(data, at);
      read += end - at;
      keep(into, num, value);
    } catch (error) {
      if (!(error instanceof PdfSyntaxError)) throw error;
      read += error.at - at;
    }
    if (read > READ_FACTOR * data.length + 1024 * 1024) throw refusals.pdfUncheckable('its objects overlap one another too much');
  }
}

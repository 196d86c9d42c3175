/**
 * Before pdf.js reads a PDF, every stream is decoded here once through every filter of its chain,
 * counting and discarding the output (pdf-decoders.ts), and the PDF is refused when the streams
 * together decode to more than the budget: a 970 KB file whose one stream inflates to 500 MB is
 * refused after 128 MiB of counting instead of being held in memory whole. Every stage's output
 * counts, since pdf.js's DecodeStreams each keep theirs.
 *
 * Streams are found by their keyword, not through the cross-reference table, so a damaged or lying
 * table hides nothing: the data starts past the end of line after `stream`, as pdf.js's lexer has
 * it (PDF 32000-1:2008, 7.3.8.1). The dictionary is the object between the last `obj` keyword and
 * `stream`, read with pdf.js's syntax (pdf-syntax.ts: comments, strings and #xx escapes included);
 * its /F or /Filter and /DP or /DecodeParms are taken in pdf.js's order. A stream whose dictionary
 * cannot be read, or whose filters are indirect objects, is refused rather than guessed at.
 *
 * - Flate, LZW, ASCIIHex, ASCII85 and RunLength are counted; a predictor counts the rows pdf.js
 *   allocates (one row of /Columns is allocated even for one byte of input).
 * - DCT, JPX, JBIG2 and CCITTFax stages are not decoded: pdf.js decodes an image XObject only to
 *   draw it, never for text. That holds only for images: a stream coded so that is refused when its
 *   dictionary does not say /Subtype /Image or when it is used as page content or a font program,
 *   which pdf.js would decode.
 * - A stream referenced under /Contents N times counts N times (pdf-references.ts): pdf.js decodes
 *   a content stream again for each page or array entry that names it.
 * - The input read is bounded by the budget too, so overlapping or endless streams keep the scan
 *   linear in the file size and the budget.
 */
import { ascii85, asciiHex, flate, lzw, runLength, type Chunks, type Stage } from './pdf-decoders.ts';
import { emptyUses, scanUses } from './pdf-references.ts';
import { PdfSyntaxError, isRegular, parseSingleObject, type PdfValue } from './pdf-syntax.ts';
import { refusals } from './refusals.ts';

const STREAM = Buffer.from('stream');
const ENDSTREAM = Buffer.from('endstream');
const OBJ = Buffer.from('obj');
const IMAGE_CODECS = new Map([
  ['DCT', 'DCTDecode'],
  ['DCTDecode', 'DCTDecode'],
  ['JPX', 'JPXDecode'],
  ['JPXDecode', 'JPXDecode'],
  ['JBIG2Decode', 'JBIG2Decode'],
  ['CCF', 'CCITTFaxDecode'],
  ['CCITTFaxDecode', 'CCITTFaxDecode'],
]);
/** What a decoded stream's end is searched again with, for a reference cut by a chunk boundary. */
const CARRY = 4096;

class OverBudget extends Error {}

interface FoundStream {
  num: number | null;
  dictionary: Map<string, PdfValue>;
  start: number;
  end: number;
}

/** Refuses the PDF when its streams decode to more than `maxInflatedBytes` together. */
export async function checkPdfStreams(bytes: Uint8Array, maxInflatedBytes: number): Promise<void> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const uses = emptyUses();
  scanUses(buffer, uses);
  const streams = findStreams(buffer);
  const sizes = new Map<FoundStream, number>();
  let total = 0;
  let consumed = 0;
  const tooMuch = () => refusals.inflated('PDF', maxInflatedBytes);
  for (const stream of streams) {
    const chain = stages(stream);
    if (chain.stages.length === 0) continue;
    let size = 0;
    const counted = (source: Chunks): Chunks =>
      (async function* () {
        for await (const chunk of source) {
          size += chunk.length;
          if (total + size > maxInflatedBytes) throw new OverBudget();
          yield chunk;
        }
      })();
    let pipeline: Chunks = input(buffer, stream, (length) => {
      consumed += length;
      if (consumed > maxInflatedBytes) throw new OverBudget();
    });
    for (const stage of chain.stages) pipeline = counted(stage(pipeline));
    try {
      let carry = new Uint8Array(0);
      for await (const chunk of pipeline) {
        const joined = Buffer.concat([carry, chunk]);
        scanUses(joined, uses, Math.max(0, carry.length - 64));
        carry = joined.subarray(Math.max(0, joined.length - CARRY));
      }
    } catch (error) {
      if (error instanceof OverBudget) throw tooMuch();
      throw error;
    }
    total += size;
    sizes.set(stream, size);
  }
  for (const stream of streams) {
    const codec = stages(stream).imageCodec;
    if (codec && (!isImage(stream) || (stream.num !== null && (uses.contents.has(stream.num) || uses.fonts.has(stream.num))))) {
      throw refusals.pdfImageCoded(codec);
    }
  }
  let weighted = 0;
  for (const [stream, size] of sizes) {
    weighted += size * Math.max(1, stream.num === null ? 1 : (uses.contents.get(stream.num) ?? 1));
    if (weighted > maxInflatedBytes) throw tooMuch();
  }
}

/** Every `stream` keyword with its dictionary; a keyword whose dictionary cannot be read is refused. */
function findStreams(buffer: Buffer): FoundStream[] {
  const objs: number[] = [];
  for (let at = buffer.indexOf(OBJ); at >= 0; at = buffer.indexOf(OBJ, at + OBJ.length)) {
    if (!isRegular(buffer[at - 1]) && !isRegular(buffer[at + 3])) objs.push(at);
  }
  const found: FoundStream[] = [];
  let regionStart = 0;
  let objIndex = 0;
  for (let at = buffer.indexOf(STREAM); at >= 0; at = buffer.indexOf(STREAM, at + STREAM.length)) {
    // `stream` as a token of its own (pdf.js's lexer reads "upstream" or "streams" as other words).
    if (isRegular(buffer[at - 1]) || isRegular(buffer[at + STREAM.length])) continue;
    const from = regionStart;
    regionStart = at + STREAM.length;
    while (objIndex + 1 < objs.length && objs[objIndex + 1]! < at) objIndex += 1;
    const obj = objs[objIndex] !== undefined && objs[objIndex]! >= from && objs[objIndex]! < at ? objs[objIndex]! : -1;
    let dictionary: PdfValue | null = null;
    if (obj >= 0) {
      try {
        dictionary = parseSingleObject(buffer, obj + OBJ.length, at);
      } catch (error) {
        if (!(error instanceof PdfSyntaxError)) throw error;
      }
    }
    if (dictionary?.kind !== 'dict') {
      // pdf.js makes a stream only after a dictionary: without `>>` before it this is data, not a stream.
      if (endsWithDictionary(buffer, from, at)) throw refusals.pdfStreamDictionary();
      continue;
    }
    const header = /(\d+)\s+\d+\s+$/.exec(buffer.toString('latin1', Math.max(from, obj - 32), obj));
    const start = dataStart(buffer, at + STREAM.length);
    if (start < 0) continue;
    found.push({ num: header ? Number(header[1]) : null, dictionary: dictionary.entries, start, end: dataEnd(buffer, start, dictionary.entries.get('Length')) });
  }
  return found;
}

function endsWithDictionary(buffer: Buffer, from: number, at: number): boolean {
  let end = at;
  while (end > from && !isRegular(buffer[end - 1]) && buffer[end - 1] !== 0x3e) end -= 1;
  return end - 2 >= from && buffer[end - 1] === 0x3e && buffer[end - 2] === 0x3e;
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
 * pdf.js takes /Length when `endstream` follows it, else it searches for `endstream`. A direct
 * length that checks out is used; otherwise the rest of the file, which holds whatever pdf.js reads
 * (every decoder here gives at least as much from a longer input) and which the decoders end
 * themselves within.
 */
function dataEnd(buffer: Buffer, start: number, length: PdfValue | undefined): number {
  if (length?.kind === 'number' && Number.isInteger(length.value) && length.value >= 0 && start + length.value <= buffer.length) {
    let at = start + length.value;
    while (at < buffer.length && !isRegular(buffer[at])) at += 1;
    if (buffer.subarray(at, at + ENDSTREAM.length).equals(ENDSTREAM)) return start + length.value;
  }
  return buffer.length;
}

/** The stream's data in chunks growing from 1 KiB, so many small streams are not each charged a large read. */
async function* input(buffer: Buffer, stream: FoundStream, read: (length: number) => void): Chunks {
  let size = 1024;
  for (let at = stream.start; at < stream.end; at += size, size = Math.min(size * 2, 64 * 1024)) {
    const chunk = buffer.subarray(at, Math.min(stream.end, at + size));
    read(chunk.length);
    yield chunk;
  }
}

/** The decoders pdf.js would chain for the stream, up to its first image codec. */
function stages(stream: FoundStream): { stages: Stage[]; imageCodec: string | null } {
  const dictionary = stream.dictionary;
  const filter = dictionary.get('F') ?? dictionary.get('Filter');
  const parameters = dictionary.get('DP') ?? dictionary.get('DecodeParms');
  const filters = filter === undefined ? [] : filter.kind === 'array' ? filter.items : [filter];
  const result: Stage[] = [];
  for (const [index, item] of filters.entries()) {
    if (item.kind !== 'name') throw refusals.pdfFilter(item.kind === 'ref' ? 'a filter named by an indirect object' : 'a filter that is not a name');
    const codec = IMAGE_CODECS.get(item.name);
    if (codec) return { stages: result, imageCodec: codec };
    const parameter = filter?.kind === 'array' ? (parameters?.kind === 'array' ? parameters.items[index] : undefined) : parameters;
    const entries = parameter?.kind === 'dict' ? parameter.entries : null;
    if (parameter?.kind === 'ref') throw refusals.pdfFilter('filter parameters in an indirect object');
    const predicted = (decoder: Stage) => {
      const predictor = predictorRows(entries);
      if (!predictor) return decoder;
      if (index !== filters.length - 1) throw refusals.pdfFilter('a predictor before another filter');
      result.push(decoder);
      return predictor;
    };
    switch (item.name) {
      case 'Fl':
      case 'FlateDecode':
        result.push(predicted(flate));
        break;
      case 'LZW':
      case 'LZWDecode': {
        const early = entries?.get('EarlyChange');
        result.push(predicted(lzw(early?.kind === 'number' ? early.value : 1)));
        break;
      }
      case 'AHx':
      case 'ASCIIHexDecode':
        result.push(asciiHex);
        break;
      case 'A85':
      case 'ASCII85Decode':
        result.push(ascii85);
        break;
      case 'RL':
      case 'RunLengthDecode':
        result.push(runLength);
        break;
      // pdf.js passes a stream through a filter it does not know (Crypt included).
      default:
        break;
    }
  }
  return { stages: result, imageCodec: null };
}

/**
 * A predictor (PDF 32000-1:2008, 7.4.4.4) as a stage that yields as many bytes as pdf.js's
 * PredictorStream allocates: a row of (Columns × Colors × BitsPerComponent) / 8 bytes for each row
 * of input (PNG rows carry one more byte, their tag), and one more row for TIFF.
 */
function predictorRows(parameters: Map<string, PdfValue> | null): Stage | null {
  const number = (key: string, fallback: number) => {
    const value = parameters?.get(key);
    if (value === undefined) return fallback;
    if (value.kind !== 'number') throw refusals.pdfFilter(`a /${key} that is not a number`);
    return value.value || fallback;
  };
  const predictor = number('Predictor', 1);
  if (predictor <= 1) return null;
  const rowBytes = Math.max(1, Math.floor((number('Columns', 1) * number('Colors', 1) * number('BitsPerComponent', 8) + 7) / 8));
  const png = predictor >= 10;
  const zeros = new Uint8Array(64 * 1024);
  return async function* (source) {
    let inputBytes = 0;
    for await (const chunk of source) inputBytes += chunk.length;
    const rows = png ? Math.ceil(inputBytes / (rowBytes + 1)) : Math.ceil(inputBytes / rowBytes) + 1;
    for (let left = rows * rowBytes; left > 0; left -= zeros.length) yield zeros.subarray(0, Math.min(left, zeros.length));
  };
}

function isImage(stream: FoundStream): boolean {
  const subtype = stream.dictionary.get('Subtype');
  return subtype?.kind === 'name' && subtype.name === 'Image';
}

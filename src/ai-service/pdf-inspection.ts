/**
 * Before pdf.js reads a PDF, every stream is decoded here once through every filter of its chain,
 * counting and discarding the output (pdf-decoders.ts), and the PDF is refused when the streams
 * together decode to more than the budget: a 970 KB file whose one stream inflates to 500 MB is
 * refused after 128 MiB of counting instead of being held in memory whole. Every stage's output
 * counts, since pdf.js's DecodeStreams each keep theirs.
 *
 * - Streams are found as pdf.js reaches them: from every `obj` keyword, read with pdf.js's syntax
 *   (pdf-objects.ts, pdf-syntax.ts), not through the cross-reference table, so a damaged or lying
 *   table hides nothing. A stream whose dictionary cannot be read, or whose filters are indirect
 *   objects, is refused rather than guessed at.
 * - An encrypted PDF is refused: pdf.js opens one with an empty user password without asking, and
 *   its streams would be counted as the ciphertext they are here.
 * - Only filters this check can count are let through (an allow-list): Flate, LZW, ASCIIHex,
 *   ASCII85, RunLength and Brotli are counted; a predictor counts the rows pdf.js allocates (one row
 *   of /Columns is allocated even for one byte of input). A Flate or Brotli stream that cannot be
 *   decoded to its end is refused, since pdf.js's decoders carry on past the damage.
 * - DCT, JPX, JBIG2 and CCITTFax stages are not decoded: pdf.js decodes an image XObject only to
 *   draw it, never for text. That holds only for images: a stream coded so is refused when its
 *   dictionary does not say /Subtype /Image or when it is used as page content or a font program,
 *   which pdf.js would decode.
 * - Every use is weighed (pdf-references.ts, pdf-forms.ts): a stream referenced under /Contents N
 *   times, directly or through an array object, counts N times, and a form counts once for each
 *   `Do` that draws it, as pdf.js decodes them again each time.
 * - The input read is bounded by the budget too, so overlapping or endless streams keep the scan
 *   linear in the file size and the budget.
 */
import { ascii85, asciiHex, brotli, flate, lzw, runLength, type Chunks, type Stage } from './pdf-decoders.ts';
import { isForm, weighedSize, type WeighedStream } from './pdf-forms.ts';
import { findStreams, objectStreamObjects, type FoundStream, type PlainObjects } from './pdf-objects.ts';
import { emptyUses, scanUses, MAX_NAMED_USES, type StreamUses } from './pdf-references.ts';
import type { PdfValue } from './pdf-syntax.ts';
import { refusals } from './refusals.ts';

const IMAGE_CODECS = new Map([
  ['DCT', 'DCTDecode'],
  ['DCTDecode', 'DCTDecode'],
  ['JPX', 'JPXDecode'],
  ['JPXDecode', 'JPXDecode'],
  ['JBIG2Decode', 'JBIG2Decode'],
  ['CCF', 'CCITTFaxDecode'],
  ['CCITTFaxDecode', 'CCITTFaxDecode'],
]);
/** What a decoded stream's end is kept for, for a name or reference cut by a chunk boundary. */
const CARRY = 64 * 1024;
/** Object streams are kept whole to be read as pdf.js reads them, up to this much together. */
const MAX_OBJECT_STREAM_BYTES = 32 * 1024 * 1024;

class OverBudget extends Error {}

/** Refuses the PDF when its streams decode to more than `maxInflatedBytes` together, or would be decoded that much for its text. */
export async function checkPdfStreams(bytes: Uint8Array, maxInflatedBytes: number): Promise<void> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const { streams, objects } = findStreams(buffer);
  const uses = emptyUses();
  for (const stream of streams) {
    if (!isForm(stream.dictionary)) continue;
    if (stream.num === null) throw refusals.pdfUncheckable("a form's object header cannot be read");
    uses.forms.add(stream.num);
  }
  scanUses(buffer, uses);
  // pdf.js opens a file encrypted with an empty user password without asking; its streams are ciphertext here.
  if (uses.encrypted) throw refusals.pdfEncrypted();
  const chains = streams.map(stages);
  const weighed: WeighedStream[] = [];
  let total = 0;
  let consumed = 0;
  let kept = 0;
  let drawn = 0;
  const tooMuch = () => refusals.inflated('PDF', maxInflatedBytes);
  for (const [index, stream] of streams.entries()) {
    const chain = chains[index]!;
    const isObjectStream = stream.dictionary.get('N')?.kind === 'number' && stream.dictionary.get('First')?.kind === 'number';
    const mayBeDrawn = stream.num === null || uses.contents.has(stream.num) || uses.forms.has(stream.num);
    if (chain.stages.length === 0 && !isObjectStream && !mayBeDrawn) continue;
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
    const draws = new Map<string, number>();
    const whole: Buffer[] | null = isObjectStream ? [] : null;
    let unfilteredSize = 0;
    try {
      let carry: Buffer = Buffer.alloc(0);
      for await (const chunk of pipeline) {
        unfilteredSize += chunk.length;
        if (whole) {
          kept += chunk.length;
          if (kept > MAX_OBJECT_STREAM_BYTES) throw refusals.pdfUncheckable(`its object streams hold more than ${MAX_OBJECT_STREAM_BYTES / 1024 / 1024} MiB`);
          whole.push(Buffer.from(chunk));
          continue;
        }
        const joined = Buffer.concat([carry, chunk]);
        carry = rest(joined, scanUses(joined, uses, 0, joined.length, draws, false));
      }
      if (carry.length > 0) scanUses(carry, uses, 0, carry.length, draws, true);
    } catch (error) {
      if (error instanceof OverBudget) throw tooMuch();
      throw error;
    }
    if (whole) {
      const data = Buffer.concat(whole);
      scanUses(data, uses);
      objectStreamObjects(data, stream.dictionary, objects);
    }
    drawn += draws.size;
    if (drawn > MAX_NAMED_USES) throw refusals.pdfUncheckable(`its content draws names more than ${MAX_NAMED_USES} times`);
    const filtered = chain.stages.length > 0;
    total += filtered ? size : 0;
    weighed.push({ num: stream.num, dictionary: stream.dictionary, size: filtered ? size : unfilteredSize, filtered, draws });
  }
  contentsArrays(uses, objects, new Set(streams.flatMap((stream) => (stream.num === null ? [] : [stream.num]))));
  for (const [index, stream] of streams.entries()) {
    const codec = chains[index]!.imageCodec;
    if (codec && (!isImage(stream) || stream.num === null || uses.contents.has(stream.num) || uses.fonts.has(stream.num))) {
      throw refusals.pdfImageCoded(codec);
    }
  }
  if (weighedSize(weighed, uses, maxInflatedBytes) > maxInflatedBytes) throw tooMuch();
}

/**
 * What to read again with the next chunk: from the first name whose reading ran into the end. A
 * name followed only by whitespace or a comment that runs on is kept as the name and a space (or
 * the start of a comment), so a long comment between `/Fm1` and `Do` cannot push it out.
 */
function rest(joined: Buffer, pending: number): Buffer {
  if (pending >= joined.length) return Buffer.alloc(0);
  if (joined.length - pending <= CARRY) return joined.subarray(pending);
  let nameEnd = pending + 1;
  while (nameEnd < joined.length && nameEnd - pending <= CARRY && !isDelimiterOrSpace(joined[nameEnd]!)) nameEnd += 1;
  if (nameEnd - pending > CARRY) throw refusals.pdfUncheckable('its content has a name longer than 64 KiB');
  const comment = joined.lastIndexOf(0x25);
  const inComment = comment >= nameEnd && joined.indexOf(0x0a, comment) < 0 && joined.indexOf(0x0d, comment) < 0;
  return Buffer.concat([joined.subarray(pending, nameEnd), Buffer.from(inComment ? ' %' : ' ')]);
}

function isDelimiterOrSpace(byte: number): boolean {
  return ' \t\r\n\f\0()<>[]{}/%'.includes(String.fromCharCode(byte));
}

/**
 * A page's /Contents may name an array object (`/Contents 7 0 R`, 7 being `[3 0 R 3 0 R]`); pdf.js
 * fetches it and decodes every stream it names, so each entry counts as a use of that stream.
 */
function contentsArrays(uses: StreamUses, objects: PlainObjects, streams: Set<number>): void {
  const added = new Map<number, number>();
  for (const [num, count] of uses.contents) {
    if (streams.has(num)) continue;
    for (const value of objects.get(num) ?? []) {
      if (value.kind !== 'array') continue;
      for (const item of value.items) if (item.kind === 'ref') added.set(item.num, (added.get(item.num) ?? 0) + count);
    }
  }
  for (const [num, count] of added) uses.contents.set(num, (uses.contents.get(num) ?? 0) + count);
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
      case 'BrotliDecode':
        result.push(brotli);
        break;
      // Only filters this check can count are let through: a name unknown here may be one pdf.js
      // decodes (it learnt /BrotliDecode after this check was written), not one it passes over.
      default:
        throw refusals.pdfFilter(`the filter /${item.name}, which this check does not know`);
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

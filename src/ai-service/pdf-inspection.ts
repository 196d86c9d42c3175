/**
 * Before pdf.js reads a PDF, every stream that pdf.js could inflate is inflated here once,
 * counting and discarding the output, and the PDF is refused when they together inflate to more
 * than the budget: a 970 KB file whose one stream inflates to 500 MB is refused after 128 MiB of
 * counting instead of being held in memory whole.
 *
 * Streams are found by their keyword, not through the cross-reference table, so a damaged or lying
 * table hides nothing: after each `stream` keyword the data starts past the next end of line, as
 * pdf.js's lexer has it (PDF 32000-1:2008, 7.3.8.1), and zlib itself says where a stream ends.
 * Data without a zlib header is skipped (pdf.js refuses FlateDecode data without one), and so are
 * image streams, which text extraction never decodes: counting them would refuse documents whose
 * pages are Flate-compressed pictures. Whatever slips past (a stream that claims to be an image,
 * an encrypted or LZW-coded stream) is still held by the extraction thread's memory cap.
 */
import { inflatedSize } from './inflated-size.ts';
import { refusals } from './refusals.ts';

const STREAM = Buffer.from('stream');
/** How far back from `stream` its dictionary is looked for. */
const DICTIONARY_WINDOW = 4096;

/** Refuses the PDF when its streams inflate to more than `maxInflatedBytes` together. */
export async function checkPdfStreams(bytes: Uint8Array, maxInflatedBytes: number): Promise<void> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let inflated = 0;
  // Every `stream` keyword is tried, even inside data already counted, so that no stream can hide
  // in another's bytes; the input zlib reads is bounded too, so crafted overlapping streams cannot
  // make the scan quadratic.
  let consumed = 0;
  const nextLf = nextByte(buffer, 0x0a);
  const nextCr = nextByte(buffer, 0x0d);
  for (let at = buffer.indexOf(STREAM); at >= 0; at = buffer.indexOf(STREAM, at + STREAM.length)) {
    if (at >= 3 && buffer.toString('latin1', at - 3, at) === 'end') continue;
    const lf = nextLf(at + STREAM.length);
    const cr = nextCr(at + STREAM.length);
    const lineEnd = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
    if (lineEnd < 0) return;
    const start = buffer[lineEnd] === 0x0d && buffer[lineEnd + 1] === 0x0a ? lineEnd + 2 : lineEnd + 1;
    if (!zlibHeader(buffer, start) || isImage(buffer, at)) continue;
    const size = await inflatedSize(buffer.subarray(start), 'zlib', maxInflatedBytes - inflated);
    inflated += size.bytes;
    consumed += size.consumed;
    if (inflated > maxInflatedBytes || consumed > maxInflatedBytes) throw refusals.inflated('PDF', maxInflatedBytes);
  }
}

/**
 * The position of the next `byte` at or after `from`, for `from`s that only grow: a position found
 * is reused until it is passed, so the search never reads the same bytes twice.
 */
function nextByte(buffer: Buffer, byte: number): (from: number) => number {
  let found = -1;
  let exhausted = false;
  return (from) => {
    if (exhausted) return -1;
    if (found < from) found = buffer.indexOf(byte, from);
    if (found < 0) exhausted = true;
    return found;
  };
}

/** RFC 1950, 2.2: method 8, a check value that divides by 31, no preset dictionary; what pdf.js's FlateStream accepts. */
function zlibHeader(buffer: Buffer, at: number): boolean {
  const cmf = buffer[at];
  const flg = buffer[at + 1];
  if (cmf === undefined || flg === undefined) return false;
  return (cmf & 0x0f) === 8 && ((cmf << 8) + flg) % 31 === 0 && (flg & 0x20) === 0;
}

/** Whether the dictionary before the `stream` keyword at `at` says /Subtype /Image. */
function isImage(buffer: Buffer, at: number): boolean {
  const window = buffer.toString('latin1', Math.max(0, at - DICTIONARY_WINDOW), at);
  const dictionary = window.slice(window.lastIndexOf('obj') + 1);
  return /\/Subtype\s*\/Image(?![A-Za-z0-9])/.test(dictionary);
}

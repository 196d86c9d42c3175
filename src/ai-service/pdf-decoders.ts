/**
 * The PDF stream filters pdf.js decodes for text (PDF 32000-1:2008, 7.4), rewritten as streaming
 * decoders so pdf-inspection.ts can count what a stream decodes to without holding it: each takes
 * and gives chunks, so a chain (`[/ASCIIHexDecode /FlateDecode]`) runs stage into stage and the
 * counter can stop it at the budget. Each follows its pdf.js class (pdf.js's src/core/*_stream.js,
 * bundled in unpdf) where it differs from the standard, so the count is of what pdf.js would hold:
 * RunLength's short copies still count their declared length, ASCII85 decodes characters it does
 * not check, LZW treats a code past the dictionary as the KwKwK case.
 */
import { Readable } from 'node:stream';
import { constants, createBrotliDecompress, createInflateRaw, type BrotliDecompress, type InflateRaw } from 'node:zlib';
import { refusals } from './refusals.ts';

export type Chunks = AsyncIterable<Uint8Array>;
export type Stage = (source: Chunks) => Chunks;

const OUTPUT_CHUNK = 64 * 1024;

/**
 * FlateDecode as pdf.js's FlateStream reads it: the two header bytes checked as it checks them (a
 * header it rejects makes an empty stream; it ignores the window size, which zlib would refuse),
 * then raw deflate with no Adler-32 check, ending at the last block whatever follows it, or where
 * the data runs out. pdf.js's own inflater does not stop at damage zlib rejects (a distance too far
 * back, an incomplete Huffman table) and goes on producing output, so such a stream is refused: its
 * size cannot be known.
 */
export async function* flate(source: Chunks): Chunks {
  const iterator = source[Symbol.asyncIterator]();
  let head = Buffer.alloc(0);
  while (head.length < 2) {
    const next = await iterator.next();
    if (next.done) return;
    head = Buffer.concat([head, next.value]);
  }
  const [cmf, flg] = [head[0]!, head[1]!];
  if ((cmf & 15) !== 8 || ((cmf << 8) + flg) % 31 !== 0 || flg & 32) return;
  const rest = (async function* () {
    if (head.length > 2) yield head.subarray(2);
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  })();
  yield* through(rest, createInflateRaw({ chunkSize: OUTPUT_CHUNK, finishFlush: constants.Z_SYNC_FLUSH }), 'FlateDecode');
}

/**
 * BrotliDecode (RFC 7932), which pdf.js decodes, through node:zlib's decoder: a stream it cannot
 * decode to its end is refused, as pdf.js's decoder would read it some other way.
 */
export const brotli: Stage = (source) => through(source, createBrotliDecompress({ chunkSize: OUTPUT_CHUNK }), 'BrotliDecode');

async function* through(source: Chunks, decoder: InflateRaw | BrotliDecompress, filter: string): Chunks {
  const input = Readable.from(source, { objectMode: false, highWaterMark: OUTPUT_CHUNK });
  const before: { error: Error | null } = { error: null };
  input.on('error', (error) => {
    before.error = error;
    decoder.destroy(error);
  });
  input.pipe(decoder);
  try {
    for await (const chunk of decoder) yield chunk as Buffer;
  } catch (error) {
    // An error of the stage before (a refusal, the budget) is passed on; the decoder's own is the data's.
    if (before.error) throw before.error;
    throw refusals.pdfDamagedStream(filter, error);
  } finally {
    input.unpipe(decoder);
    input.destroy();
    decoder.destroy();
  }
}

/** Wraps a synchronous byte-at-a-time decoder: `step` writes output through `emit` and answers false at its end of data. */
function synchronous(make: () => { step(byte: number, emit: (byte: number) => void): boolean; end(emit: (byte: number) => void): void }): Stage {
  return async function* (source) {
    const decoder = make();
    let out = new Uint8Array(OUTPUT_CHUNK);
    let length = 0;
    const ready: Uint8Array[] = [];
    const emit = (byte: number) => {
      out[length++] = byte;
      if (length === OUTPUT_CHUNK) {
        ready.push(out);
        out = new Uint8Array(OUTPUT_CHUNK);
        length = 0;
      }
    };
    let open = true;
    for await (const chunk of source) {
      for (let index = 0; index < chunk.length && open; index++) {
        open = decoder.step(chunk[index]!, emit);
        // Yield as output fills, so one small input chunk cannot expand unchecked.
        while (ready.length) yield ready.shift()!;
      }
      if (!open) break;
    }
    if (open) decoder.end(emit);
    while (ready.length) yield ready.shift()!;
    if (length) yield out.subarray(0, length);
  };
}

const isHexDigit = (byte: number) => (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66);

/** ASCIIHexDecode: pairs of hex digits, anything else skipped, `>` ends; an odd last digit is followed by 0. */
export const asciiHex: Stage = synchronous(() => {
  let first = -1;
  return {
    step(byte, emit) {
      if (byte === 0x3e) {
        if (first >= 0) emit(first << 4);
        return false;
      }
      if (!isHexDigit(byte)) return true;
      const digit = byte <= 0x39 ? byte & 15 : (byte & 15) + 9;
      if (first < 0) first = digit;
      else {
        emit((first << 4) | digit);
        first = -1;
      }
      return true;
    },
    end() {},
  };
});

/** pdf.js's Ascii85Stream skips these between characters. */
const isAscii85Space = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0c || byte === 0x0d || byte === 0x00;

/** ASCII85Decode: five characters give four bytes, `z` four zeros, `~` ends; a short last group gives one byte fewer than its characters. */
export const ascii85: Stage = synchronous(() => {
  const group: number[] = [];
  const flush = (emit: (byte: number) => void) => {
    const count = group.length;
    if (count === 0) return;
    while (group.length < 5) group.push(0x75);
    let value = 0;
    for (const code of group) value = value * 85 + (code - 33);
    const bytes = [(value >>> 24) & 255, (value >>> 16) & 255, (value >>> 8) & 255, value & 255];
    for (let index = 0; index < count - 1; index++) emit(bytes[index]!);
    group.length = 0;
  };
  return {
    step(byte, emit) {
      if (isAscii85Space(byte)) return true;
      if (byte === 0x7e) {
        flush(emit);
        return false;
      }
      if (byte === 0x7a && group.length === 0) {
        for (let index = 0; index < 4; index++) emit(0);
        return true;
      }
      group.push(byte);
      if (group.length === 5) {
        let value = 0;
        for (const code of group) value = value * 85 + (code - 33);
        emit((value >>> 24) & 255);
        emit((value >>> 16) & 255);
        emit((value >>> 8) & 255);
        emit(value & 255);
        group.length = 0;
      }
      return true;
    },
    end: flush,
  };
});

/** RunLengthDecode: a length byte n < 128 copies n + 1 bytes, n > 128 repeats the next byte 257 - n times, 128 ends. */
export const runLength: Stage = synchronous(() => {
  let copying = 0;
  let header = -1;
  return {
    step(byte, emit) {
      if (copying > 0) {
        emit(byte);
        copying -= 1;
        return true;
      }
      if (header < 0) {
        if (byte === 128) return false;
        header = byte;
        return true;
      }
      if (header < 128) {
        emit(byte);
        copying = header;
      } else {
        for (let index = 0; index < 257 - header; index++) emit(byte);
      }
      header = -1;
      return true;
    },
    // pdf.js counts a short copy at its declared length (its buffer is zero-filled).
    end(emit) {
      for (; copying > 0; copying--) emit(0);
    },
  };
});

/** LZWDecode (PDF 32000-1:2008, 7.4.4), as pdf.js's LZWStream decodes it: 9 to 12-bit codes, 256 clears, 257 ends. */
export function lzw(earlyChange: number): Stage {
  return synchronous(() => {
    const size = 4096;
    const values = new Uint8Array(size);
    const lengths = new Uint16Array(size);
    const previous = new Uint16Array(size);
    const sequence = new Uint8Array(size);
    for (let code = 0; code < 256; code++) {
      values[code] = code;
      lengths[code] = 1;
    }
    let sequenceLength = 0;
    let nextCode = 258;
    let codeLength = 9;
    let prevCode = 0;
    let bits = 0;
    let cached = 0;
    return {
      step(byte, emit) {
        cached = ((cached << 8) | byte) & 0xffffff;
        bits += 8;
        if (bits < codeLength) return true;
        bits -= codeLength;
        const code = (cached >>> bits) & ((1 << codeLength) - 1);
        const hadSequence = sequenceLength > 0;
        if (code < 256) {
          sequence[0] = code;
          sequenceLength = 1;
        } else if (code >= 258) {
          if (code < nextCode) {
            sequenceLength = lengths[code]!;
            for (let at = sequenceLength - 1, walk = code; at >= 0; at--) {
              sequence[at] = values[walk]!;
              walk = previous[walk]!;
            }
          } else {
            sequence[sequenceLength++] = sequence[0]!;
          }
        } else if (code === 256) {
          codeLength = 9;
          nextCode = 258;
          sequenceLength = 0;
          return true;
        } else {
          return false;
        }
        if (hadSequence) {
          previous[nextCode] = prevCode;
          lengths[nextCode] = lengths[prevCode]! + 1;
          values[nextCode] = sequence[0]!;
          nextCode += 1;
          const threshold = nextCode + earlyChange;
          codeLength = threshold & (threshold - 1) ? codeLength : Math.min((Math.log(threshold) / Math.LN2 + 1) | 0, 12);
        }
        prevCode = code;
        for (let at = 0; at < sequenceLength; at++) emit(sequence[at]!);
        return true;
      },
      end() {},
    };
  });
}

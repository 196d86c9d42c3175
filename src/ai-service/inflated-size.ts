/**
 * How much a deflate stream inflates to, measured by inflating it with node:zlib and throwing the
 * output away 64 KiB at a time, so a bomb is measured without being held in memory.
 */
import { createInflate, createInflateRaw } from 'node:zlib';

export interface InflatedSize {
  /** Output bytes; past `budget` the count stops somewhere above it. */
  bytes: number;
  /** Input bytes zlib read: a zlib stream ends itself, whatever follows it. */
  consumed: number;
}

/**
 * `format` is 'zlib' (RFC 1950: a PDF's FlateDecode) or 'raw' (RFC 1951: a zip entry). A stream
 * that is corrupt or cut short counts what it gave before failing, as a reader would have got.
 */
export function inflatedSize(input: Uint8Array, format: 'zlib' | 'raw', budget: number): Promise<InflatedSize> {
  return new Promise((resolve) => {
    const options = { chunkSize: 64 * 1024 };
    const inflater = format === 'zlib' ? createInflate(options) : createInflateRaw(options);
    let bytes = 0;
    const done = () => resolve({ bytes, consumed: inflater.bytesWritten });
    inflater.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > budget) {
        inflater.destroy();
        done();
      }
    });
    inflater.on('end', done);
    inflater.on('error', done);
    inflater.end(input);
  });
}

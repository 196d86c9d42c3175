/** Small generated files for parser-agreement.test.ts: each reads differently to a naive check and to its parser. */
import { greyPng, pdf, repeatedZlib } from '../support/hostile-documents.ts';

/** ASCIIHex of `data`, ended by `>`. */
export function hexOf(data: Buffer): Buffer {
  return Buffer.from(`${data.toString('hex')}>`);
}

/**
 * LZW codes (PDF 32000-1:2008, 7.4.4, EarlyChange 1) that decode to about `megabytes` MB of zero
 * bytes: each code names the entry just being made (the KwKwK case), so the sequences grow by one
 * byte per code, 8 MB per dictionary of 12-bit codes for 5 KB. `prefix` is written first, as literals.
 */
export function lzwBomb(megabytes: number, prefix: Buffer = Buffer.alloc(0)): Buffer {
  const out: number[] = [];
  let bitBuffer = 0;
  let bitCount = 0;
  let codeLength = 9;
  let nextCode = 258;
  const write = (code: number) => {
    bitBuffer = (bitBuffer << codeLength) | code;
    bitCount += codeLength;
    while (bitCount >= 8) {
      out.push((bitBuffer >>> (bitCount - 8)) & 255);
      bitCount -= 8;
    }
    bitBuffer &= (1 << bitCount) - 1;
  };
  // The decoder adds an entry after every code but the first after a clear, and widens its codes when the next entry + 1 is a power of two.
  const added = () => {
    nextCode += 1;
    if (((nextCode + 1) & nextCode) === 0 && codeLength < 12) codeLength += 1;
  };
  write(256);
  prefix.forEach((byte, index) => {
    write(byte);
    if (index > 0) added();
  });
  let produced = 0;
  while (produced < megabytes * 1_000_000) {
    write(256);
    codeLength = 9;
    nextCode = 258;
    write(0);
    let length = 1;
    while (nextCode < 4000) {
      write(nextCode);
      added();
      length += 1;
      produced += length;
    }
  }
  write(257);
  if (bitCount > 0) out.push((bitBuffer << (8 - bitCount)) & 255);
  return Buffer.from(out);
}

/**
 * A JPEG whose first bytes after SOI are FF 00 followed by 00 0F: a reader that takes FF 00 for a
 * segment with a length jumps 15 bytes, over the real frame header, to a decoy declaring 1 × 1;
 * libjpeg skips FF 00 and the bytes up to the next FF, and reads the real one, 30 000 × 30 000.
 */
export function jpegHidingItsSize(): Buffer {
  const frame = (side: number) => Buffer.from([0xff, 0xc0, 0x00, 0x0b, 0x08, side >> 8, side & 255, side >> 8, side & 255, 0x01, 0x01, 0x11, 0x00]);
  return Buffer.concat([
    Buffer.from([0xff, 0xd8, 0xff, 0x00, 0x00, 0x0f]),
    frame(30_000),
    frame(1),
    // A quantisation table, which libjpeg needs before it allocates the picture.
    Buffer.from([0xff, 0xdb, 0x00, 0x43, 0x00]),
    Buffer.alloc(64, 1),
    Buffer.from([0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00, 0x00, 0xff, 0xd9]),
  ]);
}

/** A white greyscale PNG of `width` × `height` pixels (deflate makes 36 megapixels about 50 KB). */
export function whitePng(width: number, height: number): Buffer {
  const rows = Buffer.alloc((width + 1) * height, 255);
  for (let row = 0; row < height; row++) rows[row * (width + 1)] = 0; // filter type 0 for each row
  return greyPng(width, height, rows);
}

/** `depth` lists nested in one another's last item, the innermost holding `items` items. */
export function nestedLists(depth: number, items: number): Buffer {
  return Buffer.from(`<!doctype html><html><body>${'<ul><li>level'.repeat(depth)}<ul>${'<li>item</li>'.repeat(items)}</ul>${'</li></ul>'.repeat(depth)}</body></html>`);
}

const MIB = 1024 * 1024;
export const FONT = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>';

/** One page whose content stream is `stream` under `dictionary`, shown `pages` times (every page names the same stream). */
export function pdfOfContent(dictionary: string, stream: Buffer, pages = 1): Buffer {
  const kids = Array.from({ length: pages }, (_, index) => `${index + 5} 0 R`).join(' ');
  return pdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`,
    { dictionary, stream },
    FONT,
    ...Array.from({ length: pages }, () => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 3 0 R >>'),
  ]);
}

export const text = (words: string) => Buffer.from(`BT /F1 12 Tf 72 720 Td (${words}) Tj ET`);
export const zeros = (megabytes: number) => repeatedZlib(Buffer.alloc(0), Buffer.alloc(MIB), Math.ceil((megabytes * 1_000_000) / MIB), Buffer.alloc(0)).data;

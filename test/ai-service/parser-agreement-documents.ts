/** Small generated files for parser-agreement.test.ts: each reads differently to a naive check and to its parser. */
import { createHash } from 'node:crypto';
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

/**
 * A zlib stream (RFC 1950) of one fixed-Huffman block (RFC 1951, 3.2.6) that starts with `matches`
 * copies of 258 bytes from distance 1, before any byte was written: zlib stops at the first
 * ("invalid distance too far back"), pdf.js's inflater copies zeros from before its buffer and goes
 * on. `tail` follows as literals, so pdf.js reads it after the zeros.
 */
export function farDistanceFlate(matches: number, tail: Buffer): Buffer {
  const out: number[] = [0x78, 0x01];
  let bits = 0;
  let count = 0;
  const put = (value: number, length: number) => {
    for (let index = 0; index < length; index++) {
      bits |= ((value >> index) & 1) << count;
      if (++count === 8) {
        out.push(bits);
        bits = 0;
        count = 0;
      }
    }
  };
  // Huffman codes go most significant bit first.
  const code = (value: number, length: number) => {
    for (let index = length - 1; index >= 0; index--) put((value >> index) & 1, 1);
  };
  put(1, 1); // BFINAL
  put(1, 2); // BTYPE 01: fixed codes
  for (let index = 0; index < matches; index++) {
    code(0b11000101, 8); // length code 285: 258 bytes
    code(0, 5); // distance code 0: distance 1
  }
  for (const byte of tail) {
    if (byte < 144) code(0x30 + byte, 8);
    else code(0x190 + byte - 144, 9);
  }
  code(0, 7); // end of block
  if (count > 0) out.push(bits);
  return Buffer.concat([Buffer.from(out), Buffer.alloc(4)]);
}

/**
 * A PDF of `objects` (as `pdf` numbers them) encrypted with the standard security handler, RC4 of
 * 128 bits (PDF 32000-1:2008, 7.6.3, revision 3) and an empty user password, which pdf.js opens
 * without asking. The objects must hold no strings: only stream data is encrypted.
 */
export function encryptedPdf(objects: Array<string | { dictionary: string; stream: Buffer }>): Buffer {
  const pad = Buffer.from('28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a', 'hex');
  const id = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');
  const owner = Buffer.alloc(32, 1);
  const permissions = Buffer.alloc(4);
  permissions.writeInt32LE(-4);
  let key = md5(Buffer.concat([pad, owner, permissions, id]));
  for (let round = 0; round < 50; round++) key = md5(key);
  let user = rc4(key, md5(Buffer.concat([pad, id])));
  for (let round = 1; round <= 19; round++) {
    user = rc4(
      key.map((byte) => byte ^ round),
      user,
    );
  }
  const encrypted = objects.map((object, index) => {
    if (typeof object === 'string') return object;
    const num = index + 1;
    const objectKey = md5(Buffer.concat([key, Buffer.from([num & 255, (num >> 8) & 255, num >> 16, 0, 0])]));
    return { dictionary: object.dictionary, stream: rc4(objectKey, object.stream) };
  });
  const dictionary = `<< /Filter /Standard /V 2 /R 3 /Length 128 /P -4 /O <${owner.toString('hex')}> /U <${Buffer.concat([user, Buffer.alloc(16)]).toString('hex')}> >>`;
  const file = pdf([...encrypted, dictionary]);
  const trailer = `/Root 1 0 R /Encrypt ${objects.length + 1} 0 R /ID [<${id.toString('hex')}> <${id.toString('hex')}>]`;
  return Buffer.from(file.toString('latin1').replace('/Root 1 0 R', trailer), 'latin1');
}

function md5(data: Buffer): Buffer {
  return createHash('md5').update(data).digest();
}

function rc4(key: Uint8Array, data: Buffer): Buffer {
  const state = Array.from({ length: 256 }, (_, index) => index);
  for (let index = 0, mixed = 0; index < 256; index++) {
    mixed = (mixed + state[index]! + key[index % key.length]!) & 255;
    [state[index], state[mixed]] = [state[mixed]!, state[index]!];
  }
  const out = Buffer.alloc(data.length);
  for (let index = 0, i = 0, j = 0; index < data.length; index++) {
    i = (i + 1) & 255;
    j = (j + state[i]!) & 255;
    [state[i], state[j]] = [state[j]!, state[i]!];
    out[index] = data[index]! ^ state[(state[i]! + state[j]!) & 255]!;
  }
  return out;
}

/**
 * Hostile documents for the extraction tests, built in memory by hand: each is small to generate
 * and to send, and huge, deep or slow to read. Zips and PDFs are assembled here with node:zlib so
 * that every size they declare can be chosen, true or false.
 */
import { constants, crc32, deflateRawSync, deflateSync } from 'node:zlib';

const MIB = 1024 * 1024;

export const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** Raw deflate (RFC 1951) of `head`, `repeats` copies of `body`, then `tail`, with the inflated size and CRC-32. */
export interface Deflated {
  data: Buffer;
  size: number;
  crc: number;
  adler: number;
}

/**
 * Each piece is compressed on its own and ended with a sync flush (RFC 1951 3.2.4: an empty stored
 * block, byte-aligned, not final), so a copy refers to nothing before it and the compressed body can
 * simply be repeated: 100 MB of text costs one compression of 1 MB.
 */
export function repeatedDeflate(head: Buffer, body: Buffer, repeats: number, tail: Buffer): Deflated {
  const flushed = (bytes: Buffer) => deflateRawSync(bytes, { level: 9, finishFlush: constants.Z_SYNC_FLUSH });
  const piece = flushed(body);
  const data = Buffer.concat([flushed(head), ...Array.from({ length: repeats }, () => piece), deflateRawSync(tail)]);
  let crc = crc32(head);
  for (let index = 0; index < repeats; index++) crc = crc32(body, crc);
  crc = crc32(tail, crc);
  let adler = adler32(head);
  const bodyAdler = adler32(body);
  for (let index = 0; index < repeats; index++) adler = adler32Combine(adler, bodyAdler, body.length);
  adler = adler32Combine(adler, adler32(tail), tail.length);
  return { data, size: head.length + body.length * repeats + tail.length, crc, adler };
}

/** A zlib stream (RFC 1950), what a PDF's FlateDecode holds, of the same pieces. */
export function repeatedZlib(head: Buffer, body: Buffer, repeats: number, tail: Buffer): { data: Buffer; size: number } {
  const raw = repeatedDeflate(head, body, repeats, tail);
  const checksum = Buffer.alloc(4);
  checksum.writeUInt32BE(raw.adler);
  return { data: Buffer.concat([Buffer.from([0x78, 0xda]), raw.data, checksum]), size: raw.size };
}

function adler32(bytes: Buffer): number {
  let a = 1;
  let b = 0;
  for (const byte of bytes) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/** zlib's adler32_combine: the checksum of X then Y from theirs and Y's length. */
function adler32Combine(first: number, second: number, secondLength: number): number {
  const a1 = first & 0xffff;
  const b1 = first >>> 16;
  const a2 = second & 0xffff;
  const b2 = second >>> 16;
  const a = (a1 + a2 + 65521 - 1) % 65521;
  const b = (b1 + b2 + (((secondLength % 65521) * ((a1 + 65521 - 1) % 65521)) % 65521)) % 65521;
  return ((b << 16) | a) >>> 0;
}

export interface ZipEntry {
  name: string;
  /** Stored as it is when `deflated` is absent. */
  content?: Buffer;
  deflated?: Deflated;
  /** The uncompressed size written in the headers, when it should lie. */
  declaredSize?: number;
}

/** A zip archive (APPNOTE.TXT 4.3): local headers and data, the central directory, its end record. */
export function zip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name);
    const data = entry.deflated?.data ?? entry.content ?? Buffer.alloc(0);
    const size = entry.declaredSize ?? entry.deflated?.size ?? data.length;
    const crc = entry.deflated?.crc ?? crc32(data);
    const method = entry.deflated ? 8 : 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, data);
    centrals.push(central, name);
    offset += local.length + name.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>' +
  '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
const RELATIONSHIPS =
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';
const DOCUMENT_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>';
const DOCUMENT_TAIL = '</w:body></w:document>';
const PARAGRAPH = '<w:p><w:r><w:t>All work and no play makes Jack a dull boy.</w:t></w:r></w:p>';

/**
 * A DOCX whose word/document.xml is `megabytes` MB of paragraphs, deflated to about 1/1000 of that.
 * `declaredSize` makes its headers lie about the inflated size.
 */
export function docxBomb(megabytes: number, declaredSize?: number): Buffer {
  const body = Buffer.from(PARAGRAPH.repeat(Math.ceil(MIB / PARAGRAPH.length)));
  const document = repeatedDeflate(Buffer.from(DOCUMENT_HEAD), body, Math.ceil((megabytes * 1_000_000) / body.length), Buffer.from(DOCUMENT_TAIL));
  return zip([
    { name: '[Content_Types].xml', content: Buffer.from(CONTENT_TYPES) },
    { name: '_rels/.rels', content: Buffer.from(RELATIONSHIPS) },
    { name: 'word/document.xml', deflated: document, ...(declaredSize === undefined ? {} : { declaredSize }) },
  ]);
}

/** A DOCX of one paragraph, deflated, with `extra` more (empty, stored) parts. */
export function docx(text: string, extra = 0): Buffer {
  const document = repeatedDeflate(Buffer.from(DOCUMENT_HEAD), Buffer.alloc(0), 0, Buffer.from(`<w:p><w:r><w:t>${text}</w:t></w:r></w:p>${DOCUMENT_TAIL}`));
  return zip([
    { name: '[Content_Types].xml', content: Buffer.from(CONTENT_TYPES) },
    { name: '_rels/.rels', content: Buffer.from(RELATIONSHIPS) },
    { name: 'word/document.xml', deflated: document },
    ...Array.from({ length: extra }, (_, index) => ({ name: `customXml/item${index}.xml`, content: Buffer.alloc(0) })),
  ]);
}

/** `depth` nested `<div>`s around one word: 100 000 of them are 1.1 MB. */
export function nestedHtml(depth: number): Buffer {
  return Buffer.from(`<!doctype html><html><body>${'<div>'.repeat(depth)}deep${'</div>'.repeat(depth)}</body></html>`);
}

type PdfObject = string | { dictionary: string; stream: Buffer };

/** A PDF of `objects`, numbered from 1 (the first must be the catalog), with a correct cross-reference table. */
export function pdf(objects: PdfObject[]): Buffer {
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  let length = parts[0]!.length;
  const offsets: number[] = [];
  objects.forEach((object, index) => {
    offsets.push(length);
    const body =
      typeof object === 'string'
        ? [Buffer.from(`${index + 1} 0 obj\n${object}\nendobj\n`)]
        : [Buffer.from(`${index + 1} 0 obj\n<< ${object.dictionary} /Length ${object.stream.length} >>\nstream\n`), object.stream, Buffer.from('\nendstream\nendobj\n')];
    for (const part of body) {
      parts.push(part);
      length += part.length;
    }
  });
  const xref = ['xref', `0 ${objects.length + 1}`, '0000000000 65535 f ', ...offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n `)];
  parts.push(Buffer.from(`${xref.join('\n')}\ntrailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`));
  return Buffer.concat(parts);
}

const FONT = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>';

/** One page whose content stream is `content`, deflated; `dictionary` adds to the stream's dictionary. */
function onePage(content: { data: Buffer }, dictionary = ''): Buffer {
  return pdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    { dictionary: `/Filter /FlateDecode${dictionary}`, stream: content.data },
    FONT,
  ]);
}

/**
 * A PDF whose one content stream inflates to `megabytes` MB of zeros: 500 MB is a 0.5 MB file.
 * `claimsImage` marks the stream /Subtype /Image, which pdf.js ignores for page content.
 */
export function pdfStreamBomb(megabytes: number, claimsImage = false): Buffer {
  const zeros = repeatedZlib(Buffer.alloc(0), Buffer.alloc(MIB), Math.ceil((megabytes * 1_000_000) / MIB), Buffer.alloc(0));
  return onePage(zeros, claimsImage ? ' /Subtype /Image' : '');
}

/** A PDF of `pages` empty pages. */
export function pdfOfPages(pages: number): Buffer {
  const kids = Array.from({ length: pages }, (_, index) => `${index + 3} 0 R`).join(' ');
  return pdf(['<< /Type /Catalog /Pages 2 0 R >>', `<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`, ...Array.from({ length: pages }, () => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] >>')]);
}

/**
 * A one-page PDF whose text operators show `characters` characters, a thousand per operator, each
 * line written over the last in a tiny font (pdf.js drops text that runs off the page).
 */
export function pdfOfText(characters: number): Buffer {
  const show = Buffer.from(`1 0 0 1 10 400 Tm (${'abcdefghij'.repeat(100)}) Tj\n`);
  return onePage(repeatedZlib(Buffer.from('BT /F1 0.5 Tf\n'), show, Math.ceil(characters / 1000), Buffer.from('ET\n')));
}

/** A grey PNG header declaring `width` × `height` pixels, with a few bytes of image data. */
export function pngHeader(width: number, height: number): Buffer {
  return greyPng(width, height, Buffer.alloc(64));
}

/** An 8-bit grey PNG of `width` × `height` whose image data is `rows` (filter bytes included), deflated. */
export function greyPng(width: number, height: number, rows: Buffer): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(typed));
    return Buffer.concat([length, typed, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth; colour type 0 (grey), deflate, no filter, no interlace
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', deflateSync(rows, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

/** A JSON array of `count` small objects: a few MB of text that parse into far more heap. */
export function wideJson(count: number): Buffer {
  return Buffer.from(`[${Array.from({ length: count }, (_, index) => `{"n":${index},"tags":["a","b"]}`).join(',')}]`);
}

/** A page of `text` that also paints a Flate-compressed grey image of `megabytes` MB of zeros. */
export function pdfWithLargeImage(text: string, megabytes: number): Buffer {
  const side = Math.floor(Math.sqrt(megabytes * 1_000_000));
  const image = repeatedZlib(Buffer.alloc(0), Buffer.alloc(side), side, Buffer.alloc(0));
  return pdf([
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> /Contents 4 0 R >>',
    { dictionary: '', stream: Buffer.from(`q 612 0 0 792 0 0 cm /Im1 Do Q BT /F1 12 Tf 72 720 Td (${text}) Tj ET`) },
    FONT,
    { dictionary: `/Type /XObject /Subtype /Image /Width ${side} /Height ${side} /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode`, stream: image.data },
  ]);
}

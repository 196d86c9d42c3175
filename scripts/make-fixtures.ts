/**
 * Writes the binary fixtures of the AI service tests into test/fixtures/: a two-page PDF, a DOCX
 * and a PNG of a printed sentence for OCR. They are built from Node built-ins, jszip (the zip
 * library mammoth itself reads DOCX with) and a TrueType font of the machine, so no ImageMagick or
 * PDF tool is needed and the output is byte-for-byte reproducible. The text fixtures (HTML, CSV,
 * JSON, Markdown) are written by hand and live next to these.
 *
 * Usage: node scripts/make-fixtures.ts [--font /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { crc32, deflateSync } from 'node:zlib';
import JSZip from 'jszip';

const { values } = parseArgs({ options: { font: { type: 'string', default: '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf' } } });
const out = join(import.meta.dirname, '..', 'test', 'fixtures');

/** The sentences the tests look for; keep them in step with test/ai-service/extract.test.ts. */
const REPORT_PAGES = [
  ['Annual report of the Northwind cooperative.', 'Membership rose to 4200 households this year.'],
  ['The solar array produced 310 megawatt hours.', 'Next year the board plans a second warehouse.'],
];
const MEMO_PARAGRAPHS = ['Memo to all staff', 'The office moves to Harbour Street in March.', 'Parking permits are issued by the front desk.'];
const SCAN_SENTENCE = 'The quarterly revenue grew fourteen percent';

writeFileSync(join(out, 'report.pdf'), pdf(REPORT_PAGES));
writeFileSync(join(out, 'memo.docx'), await docx(MEMO_PARAGRAPHS));
writeFileSync(join(out, 'scan.png'), renderLine(loadFont(readFileSync(values.font)), SCAN_SENTENCE, 48));
console.log(`wrote report.pdf, memo.docx and scan.png to ${out}`);

/** A minimal PDF 1.4: one Helvetica text line per entry, the xref table's byte offsets computed. */
function pdf(pages: string[][]): Buffer {
  const escape = (line: string) => line.replace(/[\\()]/g, (char) => `\\${char}`);
  const pageIds = pages.map((_, index) => 4 + index * 2);
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
  ];
  for (const [index, lines] of pages.entries()) {
    const content = ['BT', '/F1 14 Tf', '18 TL', '72 720 Td', ...lines.map((line) => `(${escape(line)}) Tj T*`), 'ET'].join('\n');
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${pageIds[index]! + 1} 0 R >>`);
    objects.push(`<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`);
  }
  let text = '%PDF-1.4\n';
  const offsets = objects.map((body, index) => {
    const offset = Buffer.byteLength(text, 'latin1');
    text += `${index + 1} 0 obj\n${body}\nendobj\n`;
    return offset;
  });
  const xref = Buffer.byteLength(text, 'latin1');
  // Each xref entry is exactly 20 bytes, "nnnnnnnnnn ggggg n" plus space and newline (PDF 1.7, 7.5.4).
  text += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('')}`;
  text += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(text, 'latin1');
}

/** The three parts a WordprocessingML package needs; the second paragraph is split over two runs. */
async function docx(paragraphs: string[]): Promise<Buffer> {
  const date = new Date('2026-01-01T00:00:00Z');
  const run = (text: string, bold = false) => `<w:r>${bold ? '<w:rPr><w:b/></w:rPr>' : ''}<w:t xml:space="preserve">${text}</w:t></w:r>`;
  const body = paragraphs
    .map((text, index) => {
      const cut = index === 1 ? text.indexOf(' Harbour') : -1;
      return `<w:p>${cut < 0 ? run(text) : run(text.slice(0, cut)) + run(text.slice(cut), true)}</w:p>`;
    })
    .join('');
  const zip = new JSZip();
  const xml = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
  zip.file(
    '[Content_Types].xml',
    `${xml}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
    { date, createFolders: false },
  );
  zip.file(
    '_rels/.rels',
    `${xml}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
    { date, createFolders: false },
  );
  zip.file('word/document.xml', `${xml}<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`, { date, createFolders: false });
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}

interface Point {
  x: number;
  y: number;
  on: boolean;
}
interface Glyph {
  advance: number;
  contours: Point[][];
}
interface Font {
  unitsPerEm: number;
  glyph(char: string): Glyph;
}

/** Just enough of TrueType (Apple TrueType Reference Manual): head, hhea, hmtx, loca, glyf and a format 4 cmap. */
function loadFont(file: Buffer): Font {
  const tables = new Map<string, number>();
  for (let index = 0; index < file.readUInt16BE(4); index++) {
    const at = 12 + 16 * index;
    tables.set(file.toString('latin1', at, at + 4), file.readUInt32BE(at + 8));
  }
  const table = (tag: string) => {
    const offset = tables.get(tag);
    if (offset === undefined) throw new Error(`the font has no ${tag} table`);
    return offset;
  };
  const head = table('head');
  const longLoca = file.readInt16BE(head + 50) === 1;
  const metrics = file.readUInt16BE(table('hhea') + 34);
  const [hmtx, loca, glyf] = [table('hmtx'), table('loca'), table('glyf')];
  const glyphIndex = cmapFormat4(file, table('cmap'));
  const locate = (index: number) => (longLoca ? file.readUInt32BE(loca + 4 * index) : file.readUInt16BE(loca + 2 * index) * 2);
  return {
    unitsPerEm: file.readUInt16BE(head + 18),
    glyph(char) {
      const index = glyphIndex(char.codePointAt(0)!);
      const advance = file.readUInt16BE(hmtx + 4 * Math.min(index, metrics - 1));
      const start = locate(index);
      if (locate(index + 1) === start) return { advance, contours: [] };
      const at = glyf + start;
      const count = file.readInt16BE(at);
      if (count < 0) throw new Error(`"${char}" is a composite glyph, which this reader does not handle`);
      const ends = Array.from({ length: count }, (_, contour) => file.readUInt16BE(at + 10 + 2 * contour));
      let cursor = at + 12 + 2 * count + file.readUInt16BE(at + 10 + 2 * count);
      const total = ends[count - 1]! + 1;
      const flags: number[] = [];
      while (flags.length < total) {
        const flag = file[cursor++]!;
        flags.push(flag);
        if (flag & 8) for (let repeat = file[cursor++]!; repeat > 0; repeat--) flags.push(flag);
      }
      // Coordinates are deltas: one byte with a sign flag, "same as before", or a signed 16-bit value.
      const coordinates = (shortBit: number, sameBit: number) => {
        let value = 0;
        return flags.map((flag) => {
          if (flag & shortBit) value += (flag & sameBit ? 1 : -1) * file[cursor++]!;
          else if (!(flag & sameBit)) {
            value += file.readInt16BE(cursor);
            cursor += 2;
          }
          return value;
        });
      };
      const xs = coordinates(2, 16);
      const ys = coordinates(4, 32);
      const points = flags.map((flag, point) => ({ x: xs[point]!, y: ys[point]!, on: (flag & 1) === 1 }));
      return { advance, contours: ends.map((end, contour) => points.slice(contour === 0 ? 0 : ends[contour - 1]! + 1, end + 1)) };
    },
  };
}

function cmapFormat4(file: Buffer, cmap: number): (code: number) => number {
  for (let index = 0; index < file.readUInt16BE(cmap + 2); index++) {
    const record = cmap + 4 + 8 * index;
    const sub = cmap + file.readUInt32BE(record + 4);
    if (file.readUInt16BE(record) !== 3 || file.readUInt16BE(record + 2) !== 1 || file.readUInt16BE(sub) !== 4) continue;
    const segments2 = file.readUInt16BE(sub + 6);
    const ends = sub + 14;
    const starts = ends + segments2 + 2;
    const deltas = starts + segments2;
    const ranges = deltas + segments2;
    return (code) => {
      for (let segment = 0; segment < segments2; segment += 2) {
        if (code > file.readUInt16BE(ends + segment)) continue;
        const start = file.readUInt16BE(starts + segment);
        const delta = file.readInt16BE(deltas + segment);
        const range = file.readUInt16BE(ranges + segment);
        if (code < start) return 0;
        if (range === 0) return (code + delta) & 0xffff;
        const glyph = file.readUInt16BE(ranges + segment + range + 2 * (code - start));
        return glyph === 0 ? 0 : (glyph + delta) & 0xffff;
      }
      return 0;
    };
  }
  throw new Error('the font has no Unicode BMP (3, 1, format 4) cmap');
}

/** A contour as a polygon: implied on-curve midpoints added, quadratic curves cut into 8 lines each. */
function flatten(contour: Point[]): Array<[number, number]> {
  const points: Point[] = [];
  contour.forEach((point, index) => {
    const next = contour[(index + 1) % contour.length]!;
    points.push(point);
    if (!point.on && !next.on) points.push({ x: (point.x + next.x) / 2, y: (point.y + next.y) / 2, on: true });
  });
  const first = points.findIndex((point) => point.on);
  const ring = [...points.slice(first), ...points.slice(0, first)];
  const polygon: Array<[number, number]> = [[ring[0]!.x, ring[0]!.y]];
  for (let index = 1; index <= ring.length;) {
    const point = ring[index % ring.length]!;
    if (point.on) {
      polygon.push([point.x, point.y]);
      index++;
      continue;
    }
    const [x0, y0] = polygon.at(-1)!;
    const end = ring[(index + 1) % ring.length]!;
    for (let step = 1; step <= 8; step++) {
      const t = step / 8;
      const [a, b, c] = [(1 - t) ** 2, 2 * (1 - t) * t, t ** 2];
      polygon.push([a * x0 + b * point.x + c * end.x, a * y0 + b * point.y + c * end.y]);
    }
    index += 2;
  }
  return polygon;
}

/** One line of black text on white, 4x4 supersampled with the nonzero winding rule, as a greyscale PNG. */
function renderLine(font: Font, text: string, pixelSize: number): Buffer {
  const SS = 4;
  const scale = pixelSize / font.unitsPerEm;
  const margin = pixelSize;
  const glyphs = [...text].map((char) => font.glyph(char));
  const width = Math.ceil(glyphs.reduce((sum, glyph) => sum + glyph.advance, 0) * scale + 2 * margin);
  const height = Math.ceil(pixelSize * 3);
  const baseline = pixelSize * 2;
  const edges: Array<[number, number, number, number]> = [];
  let pen = 0;
  for (const glyph of glyphs) {
    for (const contour of glyph.contours) {
      const polygon = flatten(contour).map(([x, y]) => [(margin + (pen + x) * scale) * SS, (baseline - y * scale) * SS] as const);
      polygon.forEach(([x0, y0], index) => {
        const [x1, y1] = polygon[(index + 1) % polygon.length]!;
        if (y0 !== y1) edges.push([x0, y0, x1, y1]);
      });
    }
    pen += glyph.advance;
  }
  const coverage = new Uint16Array(width * height);
  for (let row = 0; row < height * SS; row++) {
    const y = row + 0.5;
    const crossings = edges
      .filter(([, y0, , y1]) => (y0 <= y && y < y1) || (y1 <= y && y < y0))
      .map(([x0, y0, x1, y1]) => ({ x: x0 + ((y - y0) * (x1 - x0)) / (y1 - y0), winding: y1 > y0 ? 1 : -1 }))
      .sort((a, b) => a.x - b.x);
    let winding = 0;
    crossings.forEach((crossing, index) => {
      winding += crossing.winding;
      const next = crossings[index + 1];
      if (winding === 0 || !next) return;
      for (let column = Math.ceil(crossing.x - 0.5); column + 0.5 < next.x; column++) {
        coverage[Math.floor(row / SS) * width + Math.floor(column / SS)]! += 1;
      }
    });
  }
  const raw = Buffer.alloc((width + 1) * height); // each row: filter type 0, then its pixels
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) raw[y * (width + 1) + 1 + x] = 255 - Math.round((255 * coverage[y * width + x]!) / (SS * SS));
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth; colour type 0 (greyscale), compression, filter and interlace stay 0
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk('IHDR', header), pngChunk('IDAT', deflateSync(raw, { level: 9 })), pngChunk('IEND', Buffer.alloc(0))]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const frame = Buffer.alloc(8);
  frame.writeUInt32BE(data.length, 0);
  frame.writeUInt32BE(crc32(body), 4);
  return Buffer.concat([frame.subarray(0, 4), body, frame.subarray(4)]);
}

/**
 * The DOCX check reads the central directory JSZip reads, or refuses the file (issue 40, ZIP).
 * Each file is built here: a harmless DOCX where the end record's fields point, and a deflate bomb
 * in a second directory that a ZIP64 record names. JSZip itself is shown to read the bomb's
 * directory (so no case passes vacuously), and the check to refuse the file with its own message,
 * before anything is inflated.
 */
import JSZip from 'jszip';
import { afterAll, describe, expect, it } from 'vitest';
import { createExtractor } from '../../src/ai-service/extractor.ts';
import type { ExtractContentType } from '../../src/ai-service/protocol.ts';
import { checkZip } from '../../src/ai-service/zip-inspection.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { DOCX_TYPE, docx, docxBomb } from '../support/hostile-documents.ts';

const END = Buffer.from('PK\x05\x06', 'latin1');
const CENTRAL_HEADER = 0x02014b50;
/** The check's budget in these cases: the bomb inflates to four times as much. */
const BUDGET = 4 * 1024 * 1024;
const ZIP64 = 'The DOCX document is a ZIP64 archive, which cannot be read.';
const DAMAGED = 'The DOCX document could not be read.';
const MEMO = 'A harmless memo';

/** `archive` placed `by` bytes into a file: its central headers' local offsets and its end record's directory offset move with it. */
function placedAt(archive: Buffer, by: number): Buffer {
  const copy = Buffer.from(archive);
  const end = copy.lastIndexOf(END);
  const directory = copy.readUInt32LE(end + 16);
  for (let at = directory; copy.readUInt32LE(at) === CENTRAL_HEADER; at += 46 + copy.readUInt16LE(at + 28) + copy.readUInt16LE(at + 30) + copy.readUInt16LE(at + 32)) {
    copy.writeUInt32LE(copy.readUInt32LE(at + 42) + by, at + 42);
  }
  copy.writeUInt32LE(directory + by, end + 16);
  return copy;
}

interface Field {
  at: number;
  bytes: 2 | 4;
}

/**
 * `hidden`'s local files and central directory, a ZIP64 end record (APPNOTE.TXT 4.3.14) naming
 * that directory and its locator (4.3.15), then a DOCX of one harmless paragraph whose own end
 * record ends the file, with `field` of it set to all ones (none: a plain zip of the harmless DOCX
 * with bytes in front of it that nothing names).
 */
function behindZip64(hidden: Buffer, field?: Field): Buffer {
  const hiddenEnd = hidden.lastIndexOf(END);
  const entries = BigInt(hidden.readUInt16LE(hiddenEnd + 10));
  const directory = hidden.readUInt32LE(hiddenEnd + 16);
  const front = hidden.subarray(0, hiddenEnd);
  const shown = placedAt(docx(MEMO), front.length + 56 + 20);
  const end = front.length + 56 + 20 + shown.lastIndexOf(END);
  const record = Buffer.alloc(56);
  record.writeUInt32LE(0x06064b50, 0);
  record.writeBigUInt64LE(44n, 4);
  record.writeUInt16LE(45, 12);
  record.writeUInt16LE(45, 14);
  record.writeBigUInt64LE(entries, 24);
  record.writeBigUInt64LE(entries, 32);
  // JSZip checks that the directory, this record and the locator end where the end record starts
  // (zipEntries.js, readEndOfCentral); it walks the directory by signatures, not by this size.
  record.writeBigUInt64LE(BigInt(end - 56 - 20 - directory), 40);
  record.writeBigUInt64LE(BigInt(directory), 48);
  const locator = Buffer.alloc(20);
  locator.writeUInt32LE(0x07064b50, 0);
  locator.writeBigUInt64LE(BigInt(front.length), 8);
  locator.writeUInt32LE(1, 16);
  const file = Buffer.concat([front, record, locator, shown]);
  if (field?.bytes === 2) file.writeUInt16LE(0xffff, end + field.at);
  if (field?.bytes === 4) file.writeUInt32LE(0xffffffff, end + field.at);
  return file;
}

/** What JSZip (mammoth's reader) finds in `file`: its parts and the size word/document.xml inflates to. */
async function readByJsZip(file: Buffer): Promise<{ parts: string[]; document: number; memo: boolean }> {
  const archive = await JSZip.loadAsync(file);
  const document = await archive.file('word/document.xml')!.async('uint8array');
  return { parts: Object.keys(archive.files).sort(), document: document.length, memo: Buffer.from(document).includes(MEMO) };
}

const PARTS = ['[Content_Types].xml', '_rels/.rels', 'word/document.xml'];

describe('the DOCX check reads the directory JSZip reads', () => {
  it('reads the harmless directory, as JSZip does, when no field of the end record is all ones', async () => {
    const file = behindZip64(docxBomb(16));
    expect(await readByJsZip(file)).toEqual({ parts: PARTS, document: expect.any(Number), memo: true });
    await expect(checkZip(file, BUDGET, 'DOCX document')).resolves.toBeUndefined();
  });

  it.each([
    { field: 'number of this disk', at: 4, bytes: 2 },
    { field: 'disk where the directory starts', at: 6, bytes: 2 },
    { field: 'entries on this disk', at: 8, bytes: 2 },
    { field: 'entries in all', at: 10, bytes: 2 },
    { field: "directory's size", at: 12, bytes: 4 },
    { field: "directory's offset", at: 16, bytes: 4 },
  ] as const)("refuses a ZIP64 archive marked by the end record's $field (+$at): JSZip reads the bomb's directory", async ({ at, bytes }) => {
    const file = behindZip64(docxBomb(16), { at, bytes });
    const read = await readByJsZip(file);
    expect(read).toMatchObject({ parts: PARTS, memo: false });
    expect(read.document).toBeGreaterThan(BUDGET);
    await expect(checkZip(file, BUDGET, 'DOCX document')).rejects.toMatchObject({ status: 422, message: ZIP64 });
  });

  it.each([
    { given: 'an end record signature in the last 21 bytes (JSZip takes it and reads past the end)', file: () => Buffer.concat([docx(MEMO), END, Buffer.alloc(10)]) },
    {
      given: 'an end record whose comment runs past the end of the file (JSZip reads the comment)',
      file: () => {
        const file = docx(MEMO);
        file.writeUInt16LE(5, file.length - 2);
        return file;
      },
    },
  ])('refuses $given, as JSZip fails', async ({ file }) => {
    await expect(JSZip.loadAsync(file())).rejects.toThrow(/End of data reached/);
    await expect(checkZip(file(), BUDGET, 'DOCX document')).rejects.toMatchObject({ status: 422, message: DAMAGED });
  });

  it('finds the end record more than 64 KiB before the end of the file, as JSZip does, and reads its directory', async () => {
    const file = Buffer.concat([docxBomb(16), Buffer.alloc(100_000)]);
    expect((await readByJsZip(file)).document).toBeGreaterThan(BUDGET);
    await expect(checkZip(file, BUDGET, 'DOCX document')).rejects.toMatchObject({
      status: 422,
      message: expect.stringMatching(/^The DOCX document's part word\/document\.xml inflates to [\d ]+ times its stored size; at most 100 times can be read\.$/),
    });
  });
});

describe('through the extraction thread', () => {
  const extractor = createExtractor({ limits: loadConfig({}).ai.extraction, logger: createLogger('silent') });
  afterAll(() => extractor.close());
  const as = { type: DOCX_TYPE as ExtractContentType, charset: undefined };

  it('refuses a 200 MB bomb behind a ZIP64 record with the check’s message, not a memory or time limit, then reads a DOCX', async () => {
    await expect(extractor.extract(behindZip64(docxBomb(200), { at: 6, bytes: 2 }), as)).rejects.toMatchObject({ status: 422, message: ZIP64 });
    expect(await extractor.extract(docx(MEMO), as)).toMatchObject({ text: MEMO });
  });
});

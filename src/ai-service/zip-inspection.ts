/**
 * A DOCX is a zip (ECMA-376 Part 2). Before mammoth (through JSZip) inflates anything, its central
 * directory is read here (APPNOTE.TXT 4.3.12, 4.3.16) and the archive is refused when it has too
 * many entries, when the sizes it declares add up to more than the budget, or when an entry
 * declares a compression ratio no document needs. Declared sizes can lie, so every entry is then
 * inflated once, counting and discarding the output, against the same budget: only an archive that
 * really inflates within it reaches mammoth. Entries are found the way JSZip finds them
 * (node_modules/jszip/lib/zipEntries.js: the last end-of-central-directory record, then every
 * central header that follows its directory offset whatever count the record gives, sizes from the
 * central directory, data after the local header), so the bytes counted here are the bytes JSZip
 * inflates. An archive JSZip would read through a ZIP64 record is refused (endRecord says why).
 */
import { inflatedSize } from './inflated-size.ts';
import { refusals, unreadable } from './refusals.ts';

/** A DOCX has a few dozen parts; ten thousand is far past any real one. */
export const MAX_ZIP_ENTRIES = 10_000;
/** Text XML compresses 5 to 20 times; a part over 1 MiB that claims over 100 is a bomb. */
export const MAX_COMPRESSION_RATIO = 100;
const RATIO_APPLIES_FROM = 1024 * 1024;

const END_RECORD = Buffer.from('PK\x05\x06', 'latin1');
/** The end record's fields (offset, width) that send JSZip to the ZIP64 record when all ones. */
const ZIP64_MARKS = [
  { at: 4, bytes: 2 },
  { at: 6, bytes: 2 },
  { at: 8, bytes: 2 },
  { at: 10, bytes: 2 },
  { at: 12, bytes: 4 },
  { at: 16, bytes: 4 },
] as const;
const CENTRAL_FILE_HEADER = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;
const STORED = 0;
const DEFLATED = 8;

interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  /** Where the compressed data starts, after the local header. */
  dataStart: number;
}

/** Refuses the zip unless it inflates to at most `maxInflatedBytes`; `what` names it in messages ("DOCX document"). */
export async function checkZip(bytes: Uint8Array, maxInflatedBytes: number, what: string): Promise<void> {
  const entries = centralDirectory(bytes, what);
  let declared = 0;
  // Entries may share their data (many central headers pointing at one local header, the
  // "overlapping" zip bomb): each is inflated by JSZip, so each is counted, and the compressed
  // bytes read for them are bounded too, so the counting below stays linear in the budget.
  let read = 0;
  for (const entry of entries) {
    declared += entry.size;
    read += entry.compressedSize;
    if (entry.size > RATIO_APPLIES_FROM && entry.size > MAX_COMPRESSION_RATIO * entry.compressedSize) {
      throw refusals.denselyCompressed(what, entry.name, entry.size / Math.max(1, entry.compressedSize), MAX_COMPRESSION_RATIO);
    }
  }
  if (declared > maxInflatedBytes || read > maxInflatedBytes) throw refusals.inflated(what, maxInflatedBytes);
  let inflated = 0;
  for (const entry of entries) {
    const data = bytes.subarray(entry.dataStart, entry.dataStart + entry.compressedSize);
    inflated += entry.method === STORED ? data.length : (await inflatedSize(data, 'raw', maxInflatedBytes - inflated)).bytes;
    if (inflated > maxInflatedBytes) throw refusals.inflated(what, maxInflatedBytes);
  }
}

function centralDirectory(bytes: Uint8Array, what: string): ZipEntry[] {
  const damaged = () => unreadable(`The ${what} could not be read.`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = endRecord(bytes, view, what);
  const disk = view.getUint16(end + 4, true);
  const count = view.getUint16(end + 10, true);
  const size = view.getUint32(end + 12, true);
  const offset = view.getUint32(end + 16, true);
  // JSZip reads the rest of the zip from where the record's offset and size point, checked against
  // where the record is: a directory ending elsewhere has bytes prepended (it shifts every offset
  // by them), or is missing bytes (it fails). Refusing both keeps its reading and this one the same.
  if (disk !== 0 || offset + size !== end) throw damaged();
  // The record's entry count is not trusted: JSZip ignores it and reads central headers from
  // `offset` for as long as their signature follows (zipEntries.js, readCentralDir), even past
  // the record into its comment. The same walk is made here, so every entry it will see is counted.
  const entries: ZipEntry[] = [];
  for (let at = offset; at + 4 <= bytes.length && view.getUint32(at, true) === CENTRAL_FILE_HEADER;) {
    if (entries.length === MAX_ZIP_ENTRIES) throw refusals.parts(what, centralEntries(view, at, MAX_ZIP_ENTRIES), MAX_ZIP_ENTRIES);
    if (at + 46 > bytes.length) throw damaged();
    const flags = view.getUint16(at + 8, true);
    const method = view.getUint16(at + 10, true);
    const compressedSize = view.getUint32(at + 20, true);
    const entrySize = view.getUint32(at + 24, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    const local = view.getUint32(at + 42, true);
    if (at + 46 + nameLength + extraLength + commentLength > bytes.length) throw damaged();
    const name = new TextDecoder().decode(bytes.subarray(at + 46, at + 46 + nameLength));
    if (compressedSize === 0xffffffff || entrySize === 0xffffffff || local === 0xffffffff) throw refusals.zip64(what);
    // Bit 0: encrypted; JSZip reads neither encrypted entries nor other methods.
    if (flags & 1 || (method !== STORED && method !== DEFLATED)) throw damaged();
    // JSZip takes the data from after the local header, whose own name and extra lengths it uses.
    if (local + 30 > bytes.length || view.getUint32(local, true) !== LOCAL_FILE_HEADER) throw damaged();
    const dataStart = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    if (dataStart + compressedSize > bytes.length) throw damaged();
    entries.push({ name, method, compressedSize, size: entrySize, dataStart });
    at += 46 + nameLength + extraLength + commentLength;
  }
  // JSZip refuses an archive without entries only when the record promised some.
  if (entries.length === 0 && count !== 0) throw damaged();
  return entries;
}

/**
 * Where the end record JSZip reads starts (zipEntries.js, readEndOfCentral): the last signature in
 * the whole file, not only in the 64 KiB a comment can span, with the record and its comment whole
 * (JSZip reads both, and fails past the end of the file).
 *
 * JSZip leaves this record for the ZIP64 one when any of six fields is all ones: the disk numbers
 * (+4, +6), the entries on this disk and in all (+8, +10), the directory's size and offset (+12,
 * +16). It then takes the last ZIP64 locator in the file, the record it points to (or the last
 * one), and that record's directory, its 64-bit fields cut to 32 (DataReader.readInt) and its
 * extensible data read by a loop whose counter never moves. That directory can be a second one,
 * which the fields here never name. A DOCX within the upload limit never needs ZIP64 (APPNOTE.TXT
 * 4.4.1.4: it is for archives past 4 GiB or 65 535 entries), so rather than copy those quirks the
 * archive is refused whenever JSZip would go looking for a locator (issue 40).
 */
function endRecord(bytes: Uint8Array, view: DataView, what: string): number {
  const end = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).lastIndexOf(END_RECORD);
  if (end < 0 || end + 22 > bytes.length || end + 22 + view.getUint16(end + 20, true) > bytes.length) {
    throw unreadable(`The ${what} could not be read.`);
  }
  const allOnes = ZIP64_MARKS.some(({ at, bytes: width }) => (width === 2 ? view.getUint16(end + at, true) === 0xffff : view.getUint32(end + at, true) === 0xffffffff));
  if (allOnes) throw refusals.zip64(what);
  return end;
}

/** How many central headers follow from `at` on, counted from `counted` (for the message only; linear like the walk). */
function centralEntries(view: DataView, at: number, counted: number): number {
  let total = counted;
  while (at + 46 <= view.byteLength && view.getUint32(at, true) === CENTRAL_FILE_HEADER) {
    total += 1;
    at += 46 + view.getUint16(at + 28, true) + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return total;
}

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
 * inflates.
 */
import { inflatedSize } from './inflated-size.ts';
import { refusals, unreadable } from './refusals.ts';

/** A DOCX has a few dozen parts; ten thousand is far past any real one. */
export const MAX_ZIP_ENTRIES = 10_000;
/** Text XML compresses 5 to 20 times; a part over 1 MiB that claims over 100 is a bomb. */
export const MAX_COMPRESSION_RATIO = 100;
const RATIO_APPLIES_FROM = 1024 * 1024;

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
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
  // The record is 22 bytes and ends the file, save a comment of at most 65 535 bytes. JSZip takes
  // the last signature in the file; searching backwards from the end finds the same one, or none.
  let end = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 0xffff); at--) {
    if (view.getUint32(at, true) === END_OF_CENTRAL_DIRECTORY) {
      end = at;
      break;
    }
  }
  if (end < 0 || bytes.length - end < 22) throw damaged();
  const disk = view.getUint16(end + 4, true);
  const count = view.getUint16(end + 10, true);
  const size = view.getUint32(end + 12, true);
  const offset = view.getUint32(end + 16, true);
  if (disk === 0xffff || count === 0xffff || size === 0xffffffff || offset === 0xffffffff) throw refusals.zip64(what);
  // JSZip shifts every offset when the directory does not end where the record starts (bytes
  // prepended to the archive); refusing that case keeps its reading and this one the same.
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

/** How many central headers follow from `at` on, counted from `counted` (for the message only; linear like the walk). */
function centralEntries(view: DataView, at: number, counted: number): number {
  let total = counted;
  while (at + 46 <= view.byteLength && view.getUint32(at, true) === CENTRAL_FILE_HEADER) {
    total += 1;
    at += 46 + view.getUint16(at + 28, true) + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return total;
}

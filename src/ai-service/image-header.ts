/**
 * Width and height from a PNG or JPEG header, read before OCR (extractor.ts): bytes that are not
 * the declared format are refused without starting the OCR worker, and a small file that declares a
 * huge picture (a decompression bomb) is refused against OCR_MAX_PIXELS before the decoder
 * allocates it. Only the first bytes are read, on the service's own thread.
 *
 * Leptonica (under tesseract.js) picks the decoder from the file's first bytes, not from its media
 * type, so each reader here insists on its format's signature: a PNG sent as image/jpeg has no JPEG
 * signature and is refused, never measured as one format and decoded as another. tesseract.js only
 * converts BMP ("BM") before Leptonica, which neither signature can start with.
 */

export interface ImageSize {
  width: number;
  height: number;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The size from a PNG's IHDR chunk, which must come first (PNG specification, 11.2.2). */
export function pngSize(bytes: Uint8Array): ImageSize | null {
  if (bytes.length < 24 || PNG_SIGNATURE.some((byte, index) => bytes[index] !== byte)) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(12) !== 0x49484452) return null; // "IHDR"
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/**
 * The size from a JPEG's first start-of-frame segment, found the way libjpeg finds it (jdmarker.c,
 * read_markers and next_marker), which is what Leptonica decodes through: SOI must open the file;
 * between markers every byte that is not FF is skipped, and so are FF fill bytes; FF 00 is no
 * marker (a stuffed byte) and is skipped too; SOI again, EOI, or SOS before a frame header end the
 * reading without a size, as they end libjpeg's with an error; RSTn and TEM stand alone; every
 * other marker libjpeg knows has a two-byte length, and the first SOFn (C0-CF but DHT C4, JPG C8,
 * DAC CC) gives the size libjpeg allocates for. A marker libjpeg does not know, or a length under 2
 * (which libjpeg reads as 0 in some segments and refuses in others), is refused here.
 */
export function jpegSize(bytes: Uint8Array): ImageSize | null {
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 2;
  for (;;) {
    // next_marker: skip to an FF, then past every FF; FF 00 goes round again.
    while (at < bytes.length && bytes[at] !== 0xff) at += 1;
    while (at < bytes.length && bytes[at] === 0xff) at += 1;
    if (at >= bytes.length) return null;
    const marker = bytes[at]!;
    at += 1;
    if (marker === 0x00) continue;
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // TEM, RST0-7
    if (isFrameHeader(marker)) {
      if (at + 7 > bytes.length || view.getUint16(at) < 8) return null;
      return { height: view.getUint16(at + 3), width: view.getUint16(at + 5) };
    }
    if (!hasLength(marker) || at + 2 > bytes.length) return null;
    const length = view.getUint16(at);
    if (length < 2) return null;
    at += length;
  }
}

/** SOF0-SOF15, except DHT (C4), JPG (C8) and DAC (CC), which share the range (ITU T.81, table B.1). */
function isFrameHeader(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/** The markers libjpeg skips by their length before a frame: DHT, DAC, DQT, DNL, DRI, APP0-15, COM. SOI, EOI, SOS and the rest end the search. */
function hasLength(marker: number): boolean {
  return marker === 0xc4 || marker === 0xcc || (marker >= 0xdb && marker <= 0xdd) || (marker >= 0xe0 && marker <= 0xef) || marker === 0xfe;
}

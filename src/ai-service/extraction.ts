/**
 * `POST /v1/extract`: the raw bytes of a document, with its media type in Content-Type, become
 * `{ text, pages }`.
 *
 * - PDF: the text layer of every page (unpdf), pages separated by a blank line; `pages` is the page
 *   count. A scanned PDF without a text layer gives empty text (it is not OCR'd).
 * - DOCX: the paragraphs' raw text (mammoth); `pages` is null, since Word's page breaks are a
 *   result of layout that the file does not record reliably.
 * - PNG, JPEG: OCR (ocr.ts); `pages` is 1.
 * - HTML: the body's visible text (html-to-text), without scripts, styles, images or link URLs.
 * - JSON: the parsed document pretty-printed with two-space indentation, so keys stay next to
 *   their values; text that is not JSON is refused.
 * - Plain text, Markdown, CSV: the text as it is.
 * Text types are read as UTF-8 unless Content-Type names another charset; a byte order mark is
 * dropped. For every type but PDF and images, `pages` is null.
 */
import { extractText, getDocumentProxy } from 'unpdf';
import { HttpError } from './http-exchange.ts';
import { jpegSize, pngSize } from './image-header.ts';
import { OcrUnavailableError, type OcrEngine } from './ocr.ts';
import { EXTRACT_CONTENT_TYPES, type ExtractContentType, type ExtractResult } from './protocol.ts';

/** MAX_UPLOAD_BYTES' default (25 MiB) plus room, so every stored document can be read. */
export const EXTRACT_BODY_LIMIT = 26 * 1024 * 1024;

/** About 50 megapixels: an A4 page scanned at 600 dpi is 35; more is refused before decoding. */
const MAX_IMAGE_PIXELS = 50_000_000;

// The DOCX and HTML readers load on first use: most processes that start the service (every API
// start in `serve`, every test server) never read one.
let htmlToText: ((html: string) => string) | undefined;
const htmlReader = async () => (htmlToText ??= (await import('html-to-text')).compile({
  wordwrap: false,
  // The body limit bounds the input already; the library's own cut would end the text with "...".
  limits: { maxInputLength: Number.MAX_SAFE_INTEGER },
  selectors: [
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
    { selector: 'script', format: 'skip' },
    { selector: 'style', format: 'skip' },
    { selector: 'noscript', format: 'skip' },
    { selector: 'template', format: 'skip' },
    // Keep headings and table headers as written; upper case is the library's e-mail habit.
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
    { selector: 'table', options: { uppercaseHeaderCells: false } },
  ],
}));

/** The media type (lower-cased) and charset of a Content-Type header, or a 415 when `/v1/extract` does not read it. */
export function documentType(header: string | undefined): { type: ExtractContentType; charset: string | undefined } {
  const [media = '', ...parameters] = (header ?? '').split(';');
  const type = media.trim().toLowerCase();
  if (!(EXTRACT_CONTENT_TYPES as readonly string[]).includes(type)) {
    throw new HttpError(415, `Content-Type must be one of ${EXTRACT_CONTENT_TYPES.join(', ')}.`);
  }
  const charset = parameters.map((parameter) => parameter.trim().match(/^charset\s*=\s*"?([^"]*)"?$/i)?.[1]).find(Boolean);
  return { type: type as ExtractContentType, charset };
}

export async function extract(bytes: Uint8Array, { type, charset }: ReturnType<typeof documentType>, ocr: OcrEngine): Promise<ExtractResult> {
  const { text, pages } = await read(type, bytes, charset, ocr);
  return { text: normaliseText(text), pages };
}

async function read(type: ExtractContentType, bytes: Uint8Array, charset: string | undefined, ocr: OcrEngine): Promise<ExtractResult> {
  switch (type) {
    case 'application/pdf': return readPdf(bytes);
    case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document': return readDocx(bytes);
    case 'image/png': return readImage(bytes, pngSize(bytes), 'PNG', ocr);
    case 'image/jpeg': return readImage(bytes, jpegSize(bytes), 'JPEG', ocr);
    case 'text/html': return { text: (await htmlReader())(decode(bytes, charset)), pages: null };
    case 'application/json': return { text: prettyJson(decode(bytes, charset)), pages: null };
    case 'text/plain': case 'text/markdown': case 'text/csv': return { text: decode(bytes, charset), pages: null };
  }
}

async function readPdf(bytes: Uint8Array): Promise<ExtractResult> {
  let document;
  try {
    // pdf.js may take ownership of the buffer it is given, so it gets a copy.
    document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  } catch (error) {
    const name = (error as Error).name;
    throw unreadable(name === 'PasswordException' ? 'The PDF is password-protected.' : 'The PDF could not be read.', error);
  }
  try {
    const { totalPages, text } = await extractText(document, { mergePages: false });
    return { text: text.map((page) => page.trim()).join('\n\n'), pages: totalPages };
  } catch (error) {
    throw unreadable('The PDF could not be read.', error);
  } finally {
    await document.destroy();
  }
}

async function readDocx(bytes: Uint8Array): Promise<ExtractResult> {
  try {
    const { default: mammoth } = await import('mammoth');
    const { value } = await mammoth.extractRawText({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
    return { text: value, pages: null };
  } catch (error) {
    throw unreadable('The DOCX document could not be read.', error);
  }
}

async function readImage(bytes: Uint8Array, size: { width: number; height: number } | null, format: string, ocr: OcrEngine): Promise<ExtractResult> {
  if (!size || size.width === 0 || size.height === 0) throw unreadable(`The image is not a readable ${format} file.`);
  if (size.width * size.height > MAX_IMAGE_PIXELS) {
    throw unreadable(`The image is ${size.width}x${size.height} pixels; at most ${MAX_IMAGE_PIXELS / 1_000_000} megapixels can be read.`);
  }
  try {
    return { text: await ocr.recognize(bytes), pages: 1 };
  } catch (error) {
    if (error instanceof OcrUnavailableError) throw new HttpError(503, 'Text recognition is unavailable.', { cause: error });
    throw unreadable(`The ${format} image could not be read.`, error);
  }
}

/** Text in the declared charset (UTF-8 by default); TextDecoder drops a leading byte order mark. */
function decode(bytes: Uint8Array, charset = 'utf-8'): string {
  let decoder;
  try {
    decoder = new TextDecoder(charset);
  } catch {
    throw new HttpError(415, `The charset "${charset}" is not supported.`);
  }
  return decoder.decode(bytes);
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch (error) {
    throw unreadable('The JSON document is not valid JSON.', error);
  }
}

function unreadable(message: string, cause?: unknown): HttpError {
  return new HttpError(422, message, { cause });
}

/**
 * Text that PostgreSQL stores and people can read: lone surrogates replaced, line ends made \n,
 * vertical tab and form feed (PDF page and section breaks) turned into line breaks, and every
 * other control character removed (NUL above all, which a text column refuses), keeping \t and \n.
 */
export function normaliseText(text: string): string {
  return text
    .toWellFormed()
    .replace(/\r\n?|[\v\f\u2028\u2029]/g, '\n')
    .replace(/[\u0000-\u0008\u000e-\u001f\u007f-\u009f]/g, '')
    .trim();
}

/**
 * `POST /v1/extract`: the raw bytes of a document, with its media type in Content-Type, become
 * `{ text, pages }`.
 *
 * - PDF: the text layer of every page (pdf.js through unpdf), pages separated by a blank line;
 *   `pages` is the page count. A scanned PDF without a text layer gives empty text (no OCR).
 * - DOCX: the paragraphs' raw text (mammoth); `pages` is null, since Word's page breaks are a
 *   result of layout that the file does not record reliably.
 * - PNG, JPEG: OCR (ocr.ts, driven by extractor.ts); `pages` is 1.
 * - HTML: the body's visible text (html-to-text), without scripts, styles, images or link URLs.
 * - JSON: the parsed document pretty-printed with two-space indentation, so keys stay next to
 *   their values; text that is not JSON is refused.
 * - Plain text, Markdown, CSV: the text as it is.
 * Text types are read as UTF-8 unless Content-Type names another charset; a byte order mark is
 * dropped. For every type but PDF and images, `pages` is null.
 *
 * readDocument runs in a thread of its own (extract-thread.ts, started by extractor.ts) under
 * ExtractionLimits; the checks here bound what each reader is handed before it inflates or
 * recurses, and the thread's memory cap and time limit hold whatever gets past them.
 */
import type { ExtractionLimits } from '../config.ts';
import { checkHtmlDepth } from './html-depth.ts';
import { orderedList, quotation, unorderedList } from './html-lists.ts';
import { HttpError } from './http-exchange.ts';
import { checkPdfStreams } from './pdf-inspection.ts';
import { EXTRACT_CONTENT_TYPES, type ExtractContentType, type ExtractResult } from './protocol.ts';
import { refusals, unreadable } from './refusals.ts';
import { checkZip } from './zip-inspection.ts';

/** MAX_UPLOAD_BYTES' default (25 MiB) plus room, so every stored document can be read. */
export const EXTRACT_BODY_LIMIT = 26 * 1024 * 1024;

export type DocumentType = { type: ExtractContentType; charset: string | undefined };

/** The media type (lower-cased) and charset of a Content-Type header, or a 415 when `/v1/extract` does not read it. */
export function documentType(header: string | undefined): DocumentType {
  const [media = '', ...parameters] = (header ?? '').split(';');
  const type = media.trim().toLowerCase();
  if (!(EXTRACT_CONTENT_TYPES as readonly string[]).includes(type)) {
    throw new HttpError(415, `Content-Type must be one of ${EXTRACT_CONTENT_TYPES.join(', ')}.`);
  }
  const charset = parameters.map((parameter) => parameter.trim().match(/^charset\s*=\s*"?([^"]*)"?$/i)?.[1]).find(Boolean);
  return { type: type as ExtractContentType, charset };
}

/** What a document of `type` is called in messages: "The PDF could not be read." */
export function documentName(type: ExtractContentType): string {
  switch (type) {
    case 'application/pdf': return 'PDF';
    case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document': return 'DOCX document';
    case 'image/png': return 'PNG image';
    case 'image/jpeg': return 'JPEG image';
    case 'text/html': return 'HTML document';
    case 'application/json': return 'JSON document';
    case 'text/plain': case 'text/markdown': case 'text/csv': return 'document';
  }
}

/** The normalised text of a document of any type but an image, within `limits`; rejects with an HttpError (415, 422). */
export async function readDocument(bytes: Uint8Array, { type, charset }: DocumentType, limits: ExtractionLimits): Promise<ExtractResult> {
  const { text, pages } = await read(type, bytes, charset, limits);
  return { text: withinCharacters(normaliseText(text), limits.maxCharacters), pages };
}

/** The text, or a 422 when it is longer than `maxCharacters`: a cut text would silently lose its end. */
export function withinCharacters(text: string, maxCharacters: number): string {
  if (text.length > maxCharacters) throw refusals.characters(maxCharacters);
  return text;
}

async function read(type: ExtractContentType, bytes: Uint8Array, charset: string | undefined, limits: ExtractionLimits): Promise<ExtractResult> {
  switch (type) {
    case 'application/pdf': return readPdf(bytes, limits);
    case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document': return readDocx(bytes, limits);
    case 'text/html': return { text: await readHtml(decode(bytes, charset), limits), pages: null };
    case 'application/json': return { text: prettyJson(decode(bytes, charset), limits.maxCharacters), pages: null };
    case 'text/plain': case 'text/markdown': case 'text/csv': return { text: decode(bytes, charset), pages: null };
    case 'image/png': case 'image/jpeg': throw new Error('images are read by OCR, not in the extraction thread');
  }
}

interface TextChunk { items: Array<{ str?: string; hasEOL?: boolean }> }

async function readPdf(bytes: Uint8Array, limits: ExtractionLimits): Promise<ExtractResult> {
  await checkPdfStreams(bytes, limits.maxInflatedBytes);
  const { getDocumentProxy } = await import('unpdf');
  let document;
  try {
    document = await getDocumentProxy(bytes, { verbosity: 0 });
  } catch (error) {
    const name = (error as Error).name;
    throw unreadable(name === 'PasswordException' ? 'The PDF is password-protected.' : 'The PDF could not be read.', error);
  }
  if (document.numPages > limits.maxPdfPages) throw refusals.pages(document.numPages, limits.maxPdfPages);
  // Page by page and chunk by chunk, so a page of millions of text operators is stopped at the
  // character limit instead of being read whole first (unpdf's extractText reads every page at once).
  const texts: string[] = [];
  let kept = 0;
  try {
    for (let number = 1; number <= document.numPages; number++) {
      const page = await document.getPage(number);
      const reader = (page.streamTextContent() as ReadableStream<TextChunk>).getReader();
      let text = '';
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        for (const item of chunk.value.items) {
          if (item.str === undefined) continue; // marked-content boundaries carry no text
          text += item.hasEOL ? `${item.str}\n` : item.str;
          kept += keptLength(item.str);
        }
        // Not cancelled: the thread that runs pdf.js is terminated once it answers.
        if (kept > limits.maxCharacters) throw refusals.characters(limits.maxCharacters);
      }
      texts.push(text.trim());
      page.cleanup();
    }
  } catch (error) {
    throw error instanceof HttpError ? error : unreadable('The PDF could not be read.', error);
  }
  return { text: texts.join('\n\n'), pages: document.numPages };
}

/** Characters normaliseText keeps whatever surrounds them (neither whitespace nor control), so the count never refuses too early. */
function keptLength(text: string): number {
  let kept = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code > 0x20 && (code < 0x7f || code > 0x9f)) kept += 1;
  }
  return kept;
}

async function readDocx(bytes: Uint8Array, limits: ExtractionLimits): Promise<ExtractResult> {
  await checkZip(bytes, limits.maxInflatedBytes, 'DOCX document');
  const { default: mammoth } = await import('mammoth');
  try {
    const { value } = await mammoth.extractRawText({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
    return { text: value, pages: null };
  } catch (error) {
    throw unreadable('The DOCX document could not be read.', error);
  }
}

async function readHtml(html: string, limits: ExtractionLimits): Promise<string> {
  await checkHtmlDepth(html, limits.maxHtmlDepth);
  const toText = await htmlReader();
  try {
    return toText(html);
  } catch (error) {
    throw unreadable('The HTML document could not be read.', error);
  }
}

// The readers load on first use: a thread reads one document, of one type.
const htmlReader = async () => (await import('html-to-text')).compile({
  wordwrap: false,
  // The body limit and the depth check bound the input; the library's own cut would end the text with "...".
  limits: { maxInputLength: Number.MAX_SAFE_INTEGER },
  // Its list and quotation formatters re-indent every line at every level, output growing with
  // depth × input before the character limit applies; these write each line once (html-lists.ts).
  formatters: { unorderedList, orderedList, quotation },
  selectors: [
    { selector: 'ul', format: 'unorderedList' },
    { selector: 'ol', format: 'orderedList' },
    { selector: 'blockquote', format: 'quotation' },
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
});

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

function prettyJson(text: string, maxCharacters: number): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw unreadable('The JSON document is not valid JSON.', error);
  }
  // Indentation grows with depth: 20 KB of nested brackets pretty-print to 100 million characters.
  if (prettyLengthExceeds(value, maxCharacters)) throw refusals.characters(maxCharacters);
  try {
    return JSON.stringify(value, null, 2);
  } catch (error) {
    // JSON.parse reads any depth; JSON.stringify recurses and overflows the stack.
    throw unreadable('The JSON document nests too deeply to be read.', error);
  }
}

/**
 * Whether JSON.stringify(value, null, 2) would be longer than `limit`, from a lower bound on its
 * length (brackets, line breaks, indentation and key quotes; every scalar one character), walked
 * without recursion so any depth is measured.
 */
function prettyLengthExceeds(value: unknown, limit: number): boolean {
  let length = 0;
  const pending: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.value === null || typeof next.value !== 'object') {
      length += 1;
      continue;
    }
    const children: unknown[] = Array.isArray(next.value) ? next.value : Object.values(next.value);
    const key = Array.isArray(next.value) ? 0 : '"": '.length;
    // "[\n", then each child on a line of its own, indented and separated by ",\n", then "\n" and the closing indentation and "]".
    length += children.length === 0 ? 2 : 4 + children.length * (2 * (next.depth + 1) + key) + (children.length - 1) * 2 + 2 * next.depth;
    if (length > limit) return true;
    for (const child of children) pending.push({ value: child, depth: next.depth + 1 });
  }
  return false;
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

/**
 * `POST /v1/extract`: the raw bytes of a document, with its media type in Content-Type, become
 * `{ text, pages }`.
 *
 * - PDF: the text layer of every page (pdf.js through unpdf), pages separated by a blank line;
 *   `pages` is the page count, `pageStarts` where each page starts in the text (citations). A
 *   scanned PDF without a text layer gives empty text (no OCR).
 * - DOCX: the paragraphs' raw text (mammoth); `pages` is null, since Word's page breaks are a
 *   result of layout that the file does not record reliably; `headings` are the paragraphs of
 *   heading styles.
 * - PNG, JPEG: OCR (ocr.ts, driven by extractor.ts); `pages` is 1.
 * - HTML: the body's visible text (html-to-text), without scripts, styles, images or link URLs;
 *   `headings` says where its h1-h6 are in the text (text-headings.ts).
 * - JSON: the parsed document pretty-printed with two-space indentation, so keys stay next to
 *   their values; text that is not JSON is refused.
 * - Plain text, Markdown, CSV: the text as it is; Markdown's `headings` are its ATX headings.
 * Text types are read as UTF-8 unless Content-Type names another charset; a byte order mark is
 * dropped. For every type but PDF and images, `pages` is null.
 *
 * readDocument runs in a thread of its own (extract-thread.ts, started by extractor.ts) under
 * ExtractionLimits; the checks here bound what each reader is handed before it inflates or
 * recurses, and the thread's memory cap and time limit hold whatever gets past them.
 */
import type { FormatCallback } from 'html-to-text';
import { createRequire } from 'node:module';
import type { ExtractionLimits } from '../config.ts';
import { checkHtmlDepth } from './html-depth.ts';
import { orderedList, quotation, unorderedList } from './html-lists.ts';
import { HttpError } from './http-exchange.ts';
import { detectLanguage } from './language.ts';
import { checkPdfStreams } from './pdf-inspection.ts';
import { EXTRACT_CONTENT_TYPES, type ExtractContentType, type ExtractResult, type TextHeading } from './protocol.ts';
import { refusals, unreadable } from './refusals.ts';
import { checkZip } from './zip-inspection.ts';
import { closeMark, markdownHeadings, openMark, takeHeadingMarks, withoutMarks } from './text-headings.ts';

const require = createRequire(import.meta.url);

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
    case 'application/pdf':
      return 'PDF';
    case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document':
      return 'DOCX document';
    case 'image/png':
      return 'PNG image';
    case 'image/jpeg':
      return 'JPEG image';
    case 'text/html':
      return 'HTML document';
    case 'application/json':
      return 'JSON document';
    case 'text/plain':
    case 'text/markdown':
    case 'text/csv':
      return 'document';
  }
}

/**
 * The normalised text of a document of any type but an image, within `limits`, and its language
 * (language.ts: a bounded sample, a few milliseconds, in the document's thread or inline with a
 * small plain text); rejects with an HttpError (415, 422).
 */
export async function readDocument(bytes: Uint8Array, type: DocumentType, limits: ExtractionLimits): Promise<ExtractResult> {
  const result = await readNormalised(bytes, type, limits);
  return { ...result, language: detectLanguage(result.text) };
}

async function readNormalised(bytes: Uint8Array, { type, charset }: DocumentType, limits: ExtractionLimits): Promise<ExtractResult> {
  const read = await readText(type, bytes, charset, limits);
  if (type === 'text/html' || type === 'application/vnd.openxmlformats-officedocument.wordprocessingml.document') {
    // The heading marks survive normaliseText (neither control nor whitespace) and come out after it, so the offsets are final.
    const { text, headings } = takeHeadingMarks(normaliseText(read.text));
    return { text: withinCharacters(text, limits.maxCharacters), pages: null, ...someHeadings(headings) };
  }
  const text = withinCharacters(normaliseText(read.text), limits.maxCharacters);
  // readPdf's text is normalised already (page by page, so its page starts hold); normaliseText leaves it as it is.
  if (read.pageStarts && text.length !== read.text.length) throw new Error('normaliseText changed a PDF text normalised page by page');
  if (type === 'text/markdown') return { text, pages: null, ...someHeadings(markdownHeadings(text)) };
  return { text, pages: read.pages, ...(read.pageStarts ? { pageStarts: read.pageStarts } : {}) };
}

/** `headings` only when there are some: the answer of a document without any stays `{ text, pages }`. */
function someHeadings(headings: TextHeading[]): { headings?: TextHeading[] } {
  return headings.length > 0 ? { headings } : {};
}

/** The text, or a 422 when it is longer than `maxCharacters`: a cut text would silently lose its end. */
export function withinCharacters(text: string, maxCharacters: number): string {
  if (text.length > maxCharacters) throw refusals.characters(maxCharacters);
  return text;
}

async function readText(type: ExtractContentType, bytes: Uint8Array, charset: string | undefined, limits: ExtractionLimits): Promise<ExtractResult> {
  switch (type) {
    case 'application/pdf':
      return readPdf(bytes, limits);
    case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document':
      return readDocx(bytes, limits);
    case 'text/html':
      return { text: await readHtml(decode(bytes, charset), limits), pages: null };
    case 'application/json':
      return { text: prettyJson(decode(bytes, charset), limits.maxCharacters), pages: null };
    case 'text/plain':
    case 'text/markdown':
    case 'text/csv':
      return { text: decode(bytes, charset), pages: null };
    case 'image/png':
    case 'image/jpeg':
      throw new Error('images are read by OCR, not in the extraction thread');
  }
}

interface TextChunk {
  items: Array<{ str?: string; hasEOL?: boolean }>;
}

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
      texts.push(normaliseText(text));
      page.cleanup();
    }
  } catch (error) {
    throw error instanceof HttpError ? error : unreadable('The PDF could not be read.', error);
  }
  return { ...joinPages(texts), pages: document.numPages };
}

/**
 * The pages' texts (each normalised already), a blank line between two, and where each starts.
 * Empty first pages leave the joined text starting with line breaks; they are trimmed, as
 * normaliseText would, and the starts moved with them, so normaliseText leaves the text as it is
 * and the starts are offsets into the final text.
 */
export function joinPages(pages: string[]): { text: string; pageStarts: number[] } {
  const starts: number[] = [];
  let joined = '';
  for (const [index, page] of pages.entries()) {
    if (index > 0) joined += '\n\n';
    starts.push(joined.length);
    joined += page;
  }
  const lead = joined.length - joined.trimStart().length;
  const text = joined.trim();
  return { text, pageStarts: starts.map((start) => Math.min(Math.max(start - lead, 0), text.length)) };
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
  // mammoth's extractRawText is these two steps and a walk (lib/index.js); the walk is done here
  // (docxText) so heading paragraphs can be marked. Its modules have no `exports` map to forbid it.
  const { openZip } = require('mammoth/lib/unzip.js') as { openZip(input: { buffer: Buffer }): Promise<unknown> };
  const { read } = require('mammoth/lib/docx/docx-reader.js') as { read(file: unknown): Promise<{ value: DocxElement }> };
  try {
    const { value } = await read(await openZip({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) }));
    return { text: docxText(value), pages: null };
  } catch (error) {
    throw unreadable('The DOCX document could not be read.', error);
  }
}

interface DocxElement {
  type: string;
  value?: string;
  styleId?: string | null;
  styleName?: string | null;
  children?: DocxElement[];
}

/**
 * mammoth's raw text (lib/raw-text.js, convertElementToRawText: text as it is, a tab for a tab, a
 * blank line after each paragraph), with a mark before and after the text of each paragraph of a
 * heading style ("heading 1" to "heading 6", Word's built-in names), as readDocument expects.
 */
function docxText(element: DocxElement): string {
  if (element.type === 'text') return withoutMarks(element.value ?? '');
  if (element.type === 'tab') return '\t';
  const inner = (element.children ?? []).map(docxText).join('');
  if (element.type !== 'paragraph') return inner;
  const level = Number((/^heading ?([1-6])$/i.exec(element.styleName ?? '') ?? /^heading([1-6])$/i.exec(element.styleId ?? ''))?.[1] ?? 0);
  return (level > 0 && inner.trim() ? `${openMark(level)}${inner}${closeMark}` : inner) + '\n\n';
}

async function readHtml(html: string, limits: ExtractionLimits): Promise<string> {
  await checkHtmlDepth(html, limits.maxHtmlDepth);
  const toText = await htmlReader();
  try {
    return toText(withoutMarks(html));
  } catch (error) {
    throw unreadable('The HTML document could not be read.', error);
  }
}

// The readers load on first use: a thread reads one document, of one type.
const htmlReader = async () =>
  (await import('html-to-text')).compile({
    wordwrap: false,
    // The body limit and the depth check bound the input; the library's own cut would end the text with "...".
    limits: { maxInputLength: Number.MAX_SAFE_INTEGER },
    // Its list and quotation formatters re-indent every line at every level, output growing with
    // depth × input before the character limit applies; these write each line once (html-lists.ts).
    formatters: { unorderedList, orderedList, quotation, markedHeading },
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
      // and marked, so readDocument can say where they are (text-headings.ts).
      ...[1, 2, 3, 4, 5, 6].map((level) => ({ selector: `h${level}`, format: 'markedHeading', options: { uppercase: false, level } })),
      { selector: 'table', options: { uppercaseHeaderCells: false } },
    ],
  });

/** html-to-text's heading format (lower case here), with a mark before and after the heading's text. */
const markedHeading: FormatCallback = (element, walk, builder, options) => {
  builder.openBlock({ leadingLineBreaks: options.leadingLineBreaks || 2 });
  // An empty heading writes nothing, as before: its marks alone would make a line of their own.
  const marked = element.children.length > 0;
  if (marked) builder.addLiteral(openMark(options.level as number));
  walk(element.children, builder);
  if (marked) builder.addLiteral(closeMark);
  builder.closeBlock({ trailingLineBreaks: options.trailingLineBreaks || 2 });
};

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

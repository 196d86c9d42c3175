/**
 * The wire contract between the API and the companion AI service, shared by the service and its
 * client: the embeddings routes speak OpenAI's embeddings protocol
 * (https://platform.openai.com/docs/api-reference/embeddings), so the client also works against
 * any OpenAI-compatible provider. This module has no dependency on the service's own packages, so
 * importing the client does not load PDF, DOCX or OCR code.
 */

/** Every vector has this many numbers: the local model's size, and `dimensions` asked of a provider. */
export const EMBEDDING_DIMENSIONS = 384;

/**
 * The model name the local embedder answers with (sentence-transformers' all-MiniLM-L6-v2, run
 * offline in the AI service); the API treats it as free to use.
 */
export const LOCAL_EMBEDDING_MODEL = 'all-MiniLM-L6-v2';

/** At most this many texts per embeddings call (OpenAI's own limit). */
export const MAX_EMBEDDING_INPUTS = 2048;

/** At most this many characters per text; the job contract's text.embed bound (decisions.md). */
export const MAX_EMBEDDING_INPUT_CHARS = 8000;

/** DOCUMENT_CONTENT_TYPES of decisions.md: the media types `/v1/extract` reads. */
export const EXTRACT_CONTENT_TYPES = [
  'text/plain',
  'text/markdown',
  'text/csv',
  'text/html',
  'application/json',
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'image/png',
  'image/jpeg',
] as const;

export type ExtractContentType = (typeof EXTRACT_CONTENT_TYPES)[number];

/** `POST /v1/extract` answers this; `pages` is the PDF page count, 1 for an image, else null. */
export interface ExtractResult {
  text: string;
  pages: number | null;
  /**
   * PDF: where each page starts in `text`, one UTF-16 offset (JavaScript string index) per page,
   * the first 0, never decreasing (an empty page starts where the next one does, less the blank
   * line). Absent for other types, and from providers that do not extract.
   */
  pageStarts?: number[];
  /** HTML, DOCX and Markdown: the headings of `text` in order, each with where it starts (UTF-16 offset), its level (1-6) and its text. */
  headings?: TextHeading[];
  /**
   * The text's language, an ISO 639-3 code (`deu`, `cmn`), `und` when it could not be told
   * (language.ts). Absent from older services and from providers that do not extract: read as `und`.
   */
  language?: string;
}

export interface TextHeading {
  start: number;
  level: number;
  text: string;
}

/** `GET /health` answers this, always with status 200. */
export interface HealthReport {
  ok: boolean;
  version: string;
  provider: 'local' | 'openai';
  /** The embedding model the service answers with (LOCAL_EMBEDDING_MODEL, or the provider's), or null when it cannot embed. */
  model: string | null;
  /** The OCR engine, e.g. "tesseract.js 7.0.0 (eng)", or null when it cannot run. */
  ocr: string | null;
  problems: string[];
}

export interface EmbeddingsResult {
  /** In the order of the input texts. */
  vectors: number[][];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number } | null;
}

/**
 * Reads an OpenAI embeddings answer (float encoding) for `count` inputs: every index from 0 to
 * count - 1 exactly once, each vector EMBEDDING_DIMENSIONS finite numbers. Throws an Error naming
 * what is wrong; its message is meant for the log, not for users.
 */
export function parseEmbeddings(body: unknown, count: number): EmbeddingsResult {
  if (!isRecord(body) || !Array.isArray(body.data)) throw new Error('the answer has no data array');
  if (body.data.length !== count) throw new Error(`the answer has ${body.data.length} embeddings for ${count} inputs`);
  const vectors = new Array<number[]>(count);
  for (const item of body.data as unknown[]) {
    if (!isRecord(item) || !Number.isInteger(item.index) || !Array.isArray(item.embedding)) throw new Error('an embedding has no index or no embedding array');
    const index = item.index as number;
    if (index < 0 || index >= count || vectors[index]) throw new Error(`embedding index ${index} is out of range or repeated`);
    const embedding = item.embedding as unknown[];
    if (embedding.length !== EMBEDDING_DIMENSIONS) throw new Error(`embedding ${index} has ${embedding.length} dimensions, not ${EMBEDDING_DIMENSIONS}`);
    if (!embedding.every((value) => typeof value === 'number' && Number.isFinite(value))) throw new Error(`embedding ${index} holds a value that is not a finite number`);
    vectors[index] = embedding as number[];
  }
  const usage =
    isRecord(body.usage) && Number.isInteger(body.usage.prompt_tokens) && Number.isInteger(body.usage.total_tokens)
      ? { prompt_tokens: body.usage.prompt_tokens as number, total_tokens: body.usage.total_tokens as number }
      : null;
  return { vectors, model: typeof body.model === 'string' ? body.model : '', usage };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

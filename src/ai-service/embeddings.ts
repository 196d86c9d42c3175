/**
 * `POST /v1/embeddings` in OpenAI's shape: `{ input: string | string[], model?, dimensions?,
 * encoding_format? }` → `{ object: 'list', data: [{ object: 'embedding', embedding, index }],
 * model, usage }`. The requested `model` is accepted and ignored: the configured embedder decides,
 * and the answer's `model` says which one served (LOCAL_EMBEDDING_MODEL for the local one).
 */
import type { Embedder } from './embedder-interface.ts';
import { HttpError } from './http-exchange.ts';
import { EMBEDDING_DIMENSIONS, MAX_EMBEDDING_INPUT_CHARS, MAX_EMBEDDING_INPUTS, isRecord } from './protocol.ts';

/** 2048 texts of 8000 characters, JSON-escaped, stay well under this. */
export const EMBEDDINGS_BODY_LIMIT = 2 * 1024 * 1024;

interface EmbeddingsRequest {
  texts: string[];
  /** OpenAI's SDKs ask for base64 (little-endian float32) by default; both are served. */
  encoding: 'float' | 'base64';
}

export async function createEmbeddings(body: unknown, embedder: Embedder): Promise<unknown> {
  const { texts, encoding } = parseRequest(body);
  const result = await embedder.embed(texts);
  return {
    object: 'list',
    data: result.vectors.map((vector, index) => ({
      object: 'embedding',
      embedding: encoding === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector,
      index,
    })),
    model: result.model,
    usage: result.usage ?? countWords(texts),
  };
}

/** Words stand in for tokens where a provider does not count them (the local model does). */
function countWords(texts: string[]): { prompt_tokens: number; total_tokens: number } {
  const count = texts.reduce((sum, text) => sum + (text.match(/[\p{L}\p{M}\p{N}]+/gu)?.length ?? 0), 0);
  return { prompt_tokens: count, total_tokens: count };
}

function parseRequest(body: unknown): EmbeddingsRequest {
  const invalid = (message: string) => new HttpError(400, message);
  if (!isRecord(body)) throw invalid('The request body must be a JSON object.');
  const texts = typeof body.input === 'string' ? [body.input] : body.input;
  if (!Array.isArray(texts) || !texts.every((text) => typeof text === 'string')) {
    throw invalid("'input' must be a string or an array of strings (token arrays are not supported).");
  }
  if (texts.length < 1 || texts.length > MAX_EMBEDDING_INPUTS) throw invalid(`'input' must hold 1 to ${MAX_EMBEDDING_INPUTS} texts.`);
  const index = texts.findIndex((text: string) => text.length < 1 || text.length > MAX_EMBEDDING_INPUT_CHARS);
  if (index >= 0) throw invalid(`'input[${index}]' must be 1 to ${MAX_EMBEDDING_INPUT_CHARS} characters long.`);
  if (body.model !== undefined && typeof body.model !== 'string') throw invalid("'model' must be a string.");
  if (body.dimensions !== undefined && body.dimensions !== EMBEDDING_DIMENSIONS) throw invalid(`'dimensions' must be ${EMBEDDING_DIMENSIONS}.`);
  const encoding = body.encoding_format ?? 'float';
  if (encoding !== 'float' && encoding !== 'base64') throw invalid("'encoding_format' must be 'float' or 'base64'.");
  return { texts, encoding };
}

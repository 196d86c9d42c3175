/**
 * The `openai` embedding provider: forwards texts to an OpenAI-compatible `/embeddings` endpoint
 * (OPENAI_BASE_URL, OPENAI_API_KEY, EMBEDDING_MODEL), asking for EMBEDDING_DIMENSIONS dimensions
 * so its vectors fit the same column as the local ones. What the provider said goes to the log
 * only: callers get a generic 502, since provider messages can name accounts, keys or quotas.
 */
import type { AiSettings } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { Embedder } from './embedder-interface.ts';
import { HttpError } from './http-exchange.ts';
import { EMBEDDING_DIMENSIONS, parseEmbeddings, type EmbeddingsResult } from './protocol.ts';

/** Under the client's own 60 s default, so a slow provider answers 502 rather than a client timeout. */
const TIMEOUT_MS = 30_000;

export function createOpenAiEmbedder(settings: AiSettings['openai'], logger: Logger): Embedder {
  return {
    model: settings.model,
    problem: () => (settings.apiKey ? null : 'EMBEDDING_PROVIDER is openai but OPENAI_API_KEY is not set: embeddings cannot be made.'),
    embed: (texts) => embedWithOpenAi(texts, settings, logger),
    close: async () => {},
  };
}

async function embedWithOpenAi(texts: string[], settings: AiSettings['openai'], logger: Logger): Promise<EmbeddingsResult> {
  if (!settings.apiKey) throw new HttpError(503, 'The embedding provider is not configured.');
  const failed = (detail: Record<string, unknown>, cause?: unknown) => {
    logger.error({ ...detail, err: cause, url: `${settings.baseUrl}/embeddings` }, 'embedding provider failed');
    return new HttpError(502, 'The embedding provider failed; try again later.', { cause });
  };
  let response: Response;
  try {
    response = await fetch(`${settings.baseUrl}/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${settings.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: texts, model: settings.model, dimensions: EMBEDDING_DIMENSIONS, encoding_format: 'float' }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (error) {
    throw failed({}, error);
  }
  const text = await response.text().catch((error: unknown) => {
    throw failed({ status: response.status }, error);
  });
  if (!response.ok) throw failed({ status: response.status, body: text.slice(0, 1000) });
  try {
    const result = parseEmbeddings(JSON.parse(text), texts.length);
    return { ...result, model: result.model || settings.model };
  } catch (error) {
    throw failed({ status: response.status, problem: (error as Error).message }, error);
  }
}

/** What embeds texts, whichever provider answers (embedder.ts: local model; openai-embedder.ts: a hosted one). */
import type { EmbeddingsResult } from './protocol.ts';

export interface Embedder {
  /** The model that answers: 'all-MiniLM-L6-v2' for local, the provider's model for openai. */
  readonly model: string;
  /** Why it cannot embed (model files missing or failed to load, openai without key), or null. For the health report. */
  problem(): string | null;
  /** One unit vector of 384 numbers per text, in order. Throws HttpError (http-exchange.ts) 502/503 on provider failure. */
  embed(texts: string[]): Promise<EmbeddingsResult>;
  close(): Promise<void>;
}

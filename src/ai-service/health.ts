/**
 * `GET /health`: always 200, so a probe can tell "up but misconfigured" (ok false, with the
 * problems spelled out for an operator) from "down" (no answer).
 */
import type { AiSettings } from '../config.ts';
import { version } from '../version.ts';
import type { OcrEngine } from './ocr.ts';
import type { HealthReport } from './protocol.ts';

export function healthReport(settings: AiSettings, ocr: OcrEngine): HealthReport {
  const problems: string[] = [];
  if (settings.provider === 'openai' && !settings.openai.apiKey) {
    problems.push('EMBEDDING_PROVIDER is openai but OPENAI_API_KEY is not set: embeddings cannot be made.');
  }
  if (ocr.problem) problems.push(ocr.problem);
  return { ok: problems.length === 0, version, provider: settings.provider, ocr: ocr.description, problems };
}

/**
 * `GET /health`: always 200, so a probe can tell "up but misconfigured" (ok false, with the
 * problems spelled out for an operator) from "down" (no answer). Open without the API key: it
 * names the software and the model, nothing a caller could use.
 */
import type { AiSettings } from '../config.ts';
import { version } from '../version.ts';
import type { Embedder } from './embedder-interface.ts';
import type { Extractor } from './extractor.ts';
import type { HealthReport } from './protocol.ts';

export function healthReport(settings: AiSettings, ocr: Extractor['ocr'], embedder: Embedder): HealthReport {
  const problems: string[] = [];
  const embedding = embedder.problem();
  if (embedding) problems.push(embedding);
  if (ocr.problem) problems.push(ocr.problem);
  return { ok: problems.length === 0, version, provider: settings.provider, model: embedding ? null : embedder.model, ocr: ocr.description, problems };
}

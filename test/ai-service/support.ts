/** Shared pieces of the AI service tests: settings, a silent logger, fixtures, a started service. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { loadConfig, type AiSettings } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { startAiService, type AiService, type AiServiceOptions } from '../../src/ai-service/server.ts';

export const logger = createLogger('silent');

/**
 * The model's setup in the suite: one onnxruntime thread at the API's priority. The suite runs
 * three files at once on two cores, where every core's thread for each file's model (the
 * default), or a niceness above 0, let the other files' work starve a test's model into its
 * timeout; thread-priority.test.ts tests both settings.
 */
export const SUITE_MODEL = { embedding: { threads: 1, batchSize: 8 }, threadNice: 0 } satisfies Partial<AiSettings>;

/** The defaults (limits included) with SUITE_MODEL, on a free loopback port, with no API key unless given. */
export function settings(overrides: Partial<AiSettings> = {}): AiSettings {
  return {
    ...loadConfig({}).ai,
    ...SUITE_MODEL,
    url: 'http://127.0.0.1:1',
    apiKey: undefined,
    host: '127.0.0.1',
    port: 0,
    provider: 'local',
    openai: { baseUrl: 'http://127.0.0.1:1/v1', apiKey: undefined, model: 'text-embedding-3-small' },
    ...overrides,
  };
}

export function fixture(name: string): Buffer {
  return readFileSync(join(import.meta.dirname, '..', 'fixtures', name));
}

/** A service on a free loopback port, closed after the file's tests. */
export async function serve(overrides: Partial<AiServiceOptions> = {}): Promise<AiService> {
  const service = await startAiService({ settings: settings(), host: '127.0.0.1', port: 0, logger, ...overrides });
  afterAll(() => service.close());
  return service;
}

/** A JSON answer, loosely typed: the tests check its shape. */
export async function json(response: Response): Promise<any> {
  return response.json();
}

export async function post(url: string, body: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: await json(response) };
}

/**
 * The AI service's child process parses untrusted files: it gets its own settings and what Node
 * needs, never the API's secrets (docs/ai-service.md). Started as `serve` starts it
 * (startAiChild), from a parent whose environment holds the secrets of a production deployment;
 * its environment is read from /proc/<pid>/environ. And the allow-list is checked against the
 * configuration: no setting outside it changes what the AI service is configured with.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiChildEnvironment, AI_CHILD_SETTINGS, startAiChild, type AiChild } from '../../src/ai-service/child-process.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { configSchema } from '../../src/config/schema.ts';
import { createLogger } from '../../src/logger.ts';

/** What the API holds and the child must not: the parent's environment during the test. */
const SECRETS: Record<string, string> = {
  NODE_ENV: 'production',
  DATABASE_URL: 'postgres://api:database-password@127.0.0.1:9/api',
  SECRET: 'a-production-secret-of-at-least-32-characters',
  METRICS_TOKEN: 'metrics-token-for-the-test',
  STRIPE_SECRET_KEY: 'sk_test_not_for_the_child',
  STRIPE_WEBHOOK_SECRET: 'whsec_not_for_the_child',
  S3_ACCESS_KEY_ID: 'AKIANOTFORTHECHILD',
  S3_SECRET_ACCESS_KEY: 's3-secret-not-for-the-child',
  GITHUB_CLIENT_SECRET: 'github-secret-not-for-the-child',
  SMTP_URL: 'smtp://user:mail-password@127.0.0.1:9',
  UNRELATED_TOKEN: 'whatever-else-the-parent-has',
};
const SETTINGS: Record<string, string> = { EXTRACT_MAX_PDF_PAGES: '77', LOG_LEVEL: 'warn' };

const saved = new Map<string, string | undefined>();
let child: AiChild;

beforeAll(async () => {
  for (const [name, value] of Object.entries({ ...SECRETS, ...SETTINGS })) {
    saved.set(name, process.env[name]);
    process.env[name] = value;
  }
  child = await startAiChild({ ...loadConfig({ AI_PORT: '0', AI_API_KEY: 'the-childs-own-key' }).ai, port: 0 }, createLogger('silent'));
}, 60_000);

afterAll(async () => {
  await child?.close();
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

async function environmentOf(pid: number): Promise<Record<string, string>> {
  const text = await readFile(`/proc/${pid}/environ`, 'utf8');
  return Object.fromEntries(
    text
      .split('\0')
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
}

describe('the AI child process environment', () => {
  it("holds none of the API's secrets, only its own settings, its key and what Node needs", async () => {
    const env = await environmentOf(child.pid()!);
    for (const name of Object.keys(SECRETS)) expect(env, name).not.toHaveProperty(name);
    expect(Object.values(env).join('\n')).not.toMatch(/password|not-for-the-child|production-secret/);
    expect(env).toMatchObject({ ...SETTINGS, AI_API_KEY: 'the-childs-own-key', PATH: process.env.PATH });
    // And it serves, with the key it was given (a production parent's child needs none of the secrets to start).
    expect((await fetch(`${child.url}/health`)).status).toBe(200);
    expect((await fetch(`${child.url}/v1/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"input":"hi"}' })).status).toBe(401);
  });

  it('passes every setting the AI service reads: changing any other one leaves its configuration as it was', () => {
    const base = loadConfig({}).ai;
    const own = new Set(AI_CHILD_SETTINGS);
    let tried = 0;
    for (const [name, schema] of Object.entries(configSchema.properties) as [string, any][]) {
      if (own.has(name)) continue;
      let changed;
      try {
        changed = loadConfig({ [name]: anotherValue(schema) }).ai;
      } catch (error) {
        if (error instanceof ConfigError) continue; // needs a companion setting; says nothing about the AI service
        throw error;
      }
      tried++;
      expect(changed, name).toEqual(base);
    }
    expect(tried).toBeGreaterThan(40);
    // And the ones passed do reach it.
    expect(loadConfig(aiChildEnvironment({ EXTRACT_MAX_PDF_PAGES: '77' }, {})).ai.extraction.maxPdfPages).toBe(77);
  });
});

/** A valid value of a setting other than its default. */
function anotherValue(schema: { type: string; default?: unknown; enum?: string[]; minimum?: number; maximum?: number; minLength?: number; format?: string }): string {
  if (schema.enum) return schema.enum.find((value) => value !== schema.default) ?? schema.enum[0]!;
  if (schema.type === 'boolean') return String(schema.default !== true);
  if (schema.type === 'integer') {
    const value = typeof schema.default === 'number' ? schema.default + 1 : (schema.minimum ?? 0) + 1;
    return String(schema.maximum !== undefined && value > schema.maximum ? schema.maximum - 1 : value);
  }
  if (schema.type === 'array') return 'http://changed.example';
  if (schema.format === 'http-url') return 'http://changed.example:1234';
  return 'c'.repeat(Math.max(schema.minLength ?? 0, 40));
}

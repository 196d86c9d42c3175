/**
 * `main.ts ai` in production refuses to start open to the network: on an address other machines
 * can reach (AI_HOST not loopback) without AI_API_KEY it would answer anyone (docs/ai-service.md,
 * docs/deploying.md). The rule as a table, then the real command: a refusal is a clear message on
 * stderr and exit code 1; with a key, or on loopback, it serves.
 */
import { describe, expect, it } from 'vitest';
import { openAiServiceRefusal } from '../../src/composition/commands.ts';
import { loadConfig } from '../../src/config.ts';
import { spawnService } from '../support/processes.ts';

const PRODUCTION = { NODE_ENV: 'production', SECRET: 'a-production-secret-of-at-least-32-characters', METRICS_TOKEN: 'metrics-token-for-the-test' };

describe('the rule', () => {
  const cases: { given: Record<string, string>; want: 'refused' | 'starts' }[] = [
    { given: { ...PRODUCTION, AI_HOST: '0.0.0.0' }, want: 'refused' },
    { given: { ...PRODUCTION, AI_HOST: '::' }, want: 'refused' },
    { given: { ...PRODUCTION, AI_HOST: '10.1.2.3' }, want: 'refused' },
    { given: { ...PRODUCTION, AI_HOST: 'ai.internal.example' }, want: 'refused' },
    { given: { ...PRODUCTION, AI_HOST: '0.0.0.0', AI_API_KEY: '' }, want: 'refused' },
    { given: { ...PRODUCTION, AI_HOST: '0.0.0.0', AI_API_KEY: 'a-key' }, want: 'starts' },
    { given: { ...PRODUCTION }, want: 'starts' }, // AI_HOST defaults to 127.0.0.1
    { given: { ...PRODUCTION, AI_HOST: '127.0.0.2' }, want: 'starts' },
    { given: { ...PRODUCTION, AI_HOST: '::1' }, want: 'starts' },
    { given: { ...PRODUCTION, AI_HOST: 'localhost' }, want: 'starts' },
    { given: { NODE_ENV: 'development', AI_HOST: '0.0.0.0' }, want: 'starts' },
  ];
  it.each(cases)('$given.NODE_ENV, AI_HOST=$given.AI_HOST, AI_API_KEY=$given.AI_API_KEY: $want', ({ given, want }) => {
    expect(openAiServiceRefusal(loadConfig(given)) ? 'refused' : 'starts').toBe(want);
  });
});

describe('main.ts ai', () => {
  it('in production on 0.0.0.0 without AI_API_KEY: says why on stderr and exits 1, listening nowhere', { timeout: 60_000 }, async () => {
    const ai = spawnService('ai', { ...PRODUCTION, AI_HOST: '0.0.0.0', AI_PORT: '0', AI_API_KEY: '' });
    const never = ai.logged('AI service listening');
    await expect(never).rejects.toThrow(/exited \(1\).*Refusing to start the AI service: AI_HOST is 0\.0\.0\.0.*AI_API_KEY is not set/s);
    expect((await ai.exited)[0]).toBe(1);
    expect(ai.entries.some((entry) => entry.msg === 'AI service listening')).toBe(false);
  });

  it('in production on 0.0.0.0 with AI_API_KEY: serves', { timeout: 60_000 }, async () => {
    const ai = spawnService('ai', { ...PRODUCTION, AI_HOST: '0.0.0.0', AI_PORT: '0', AI_API_KEY: 'a-key-for-the-test' });
    try {
      expect((await ai.logged('AI service listening')).apiKey).toBe(true);
    } finally {
      await ai.stop();
    }
  });
});

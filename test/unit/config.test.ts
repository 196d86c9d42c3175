import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildConfigurationDoc } from '../../codegen/configuration-doc.ts';
import { ConfigError, loadConfig, settingNames } from '../../src/config.ts';
import { settingSchema } from '../../src/config/schema.ts';

describe('loadConfig', () => {
  it('has defaults that make the embedded mode work', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 3000, host: '127.0.0.1', databaseUrl: undefined, logLevel: 'info', rateLimitPerMinute: 300, trustProxy: false, trustedOrigins: [] });
    expect(config.dataDir).toMatch(/\.data$/);
    expect(config.publicUrl).toBe('http://127.0.0.1:3000');
  });

  const good = [
    { given: { PORT: '8080' }, want: { port: 8080, publicUrl: 'http://127.0.0.1:8080' } },
    { given: { PUBLIC_URL: 'https://api.example.com/' }, want: { publicUrl: 'https://api.example.com' } },
    { given: { TRUSTED_ORIGINS: 'https://a.example.com, https://b.example.com:8443' }, want: { trustedOrigins: ['https://a.example.com', 'https://b.example.com:8443'] } },
    { given: { TRUST_PROXY: 'yes', LOG_LEVEL: 'debug' }, want: { trustProxy: 1, logLevel: 'debug' } },
    // TRUST_PROXY: true is one proxy hop, a number that many hops, 0 or false none, else a list of proxies.
    { given: { TRUST_PROXY: 'true' }, want: { trustProxy: 1 } },
    { given: { TRUST_PROXY: '2' }, want: { trustProxy: 2 } },
    { given: { TRUST_PROXY: '0' }, want: { trustProxy: false } },
    { given: { TRUST_PROXY: 'off' }, want: { trustProxy: false } },
    { given: { TRUST_PROXY: 'loopback, 10.0.0.0/8, 192.168.1.1, fd00::/8, 172.16.0.0/255.240.0.0' }, want: { trustProxy: ['loopback', '10.0.0.0/8', '192.168.1.1', 'fd00::/8', '172.16.0.0/255.240.0.0'] } },
    { given: { DATABASE_URL: 'postgres://u:p@db:5432/app' }, want: { databaseUrl: 'postgres://u:p@db:5432/app' } },
    { given: { NODE_ENV: 'production', SECRET: 'a-production-secret-of-32-characters', METRICS_TOKEN: 'scrape-me' }, want: { validateResponses: false, metricsToken: 'scrape-me' } },
    // Outside production an unset METRICS_TOKEN leaves GET /metrics open.
    { given: { NODE_ENV: 'development' }, want: { metricsToken: undefined } },
    { given: { NODE_ENV: 'test', METRICS_TOKEN: 'scrape-me' }, want: { metricsToken: 'scrape-me' } },
    { given: { CONTACT_EMAIL: 'hello@example.com', REQUIRE_EMAIL_VERIFICATION: 'true' }, want: { contactEmail: 'hello@example.com', requireEmailVerification: true } },
    { given: { PORT: '  ' }, want: { port: 3000 } },
    { given: {}, want: { database: { statementTimeoutMs: 8_000, lockTimeoutMs: 10_000, idleInTransactionTimeoutMs: 60_000, transactionGuard: true, deadlineMs: 10_000, jobDeadlineMs: 60_000 } } },
    {
      given: { DB_STATEMENT_TIMEOUT_MS: '5000', DB_LOCK_TIMEOUT_MS: '0', DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: '120000' },
      want: { database: { statementTimeoutMs: 5000, lockTimeoutMs: 0, idleInTransactionTimeoutMs: 120_000 } },
    },
    { given: { NODE_ENV: 'production', SECRET: 'a-production-secret-of-32-characters', METRICS_TOKEN: 'scrape-me' }, want: { database: { transactionGuard: false } } },
    { given: { NODE_ENV: 'test' }, want: { database: { transactionGuard: true } } },
    // The worker: a child process on a database server, inside the API on the embedded database.
    { given: {}, want: { worker: { mode: 'inline', concurrency: 2, batchSize: 4 } } },
    { given: { DATABASE_URL: 'postgres://db/app' }, want: { worker: { mode: 'process', batchSize: 1 } } },
    { given: { DATABASE_URL: 'postgres://db/app', WORKER: 'inline', WORKER_BATCH_SIZE: '1' }, want: { worker: { mode: 'inline', batchSize: 1 } } },
  ];
  for (const { given, want } of good) {
    it(`reads ${JSON.stringify(given)}`, () => {
      expect(loadConfig(given)).toMatchObject(want);
    });
  }

  const bad = [
    { given: { PORT: 'eighty' }, names: 'PORT' },
    { given: { PORT: '70000' }, names: 'PORT' },
    { given: { TRUST_PROXY: 'maybe' }, names: 'TRUST_PROXY' },
    { given: { TRUST_PROXY: '10.0.0.0/33' }, names: 'TRUST_PROXY' },
    { given: { TRUST_PROXY: '10.0.0.1, example.com' }, names: 'TRUST_PROXY' },
    { given: { TRUST_PROXY: '100' }, names: 'TRUST_PROXY' },
    { given: { LOG_LEVEL: 'loud' }, names: 'LOG_LEVEL' },
    { given: { DATABASE_URL: 'mysql://db/app' }, names: 'DATABASE_URL' },
    { given: { PUBLIC_URL: 'ftp://files' }, names: 'PUBLIC_URL' },
    { given: { TRUSTED_ORIGINS: 'https://a.example.com/path' }, names: 'TRUSTED_ORIGINS' },
    { given: { RATE_LIMIT_PER_MINUTE: '0' }, names: 'RATE_LIMIT_PER_MINUTE' },
    { given: { CONTACT_EMAIL: 'not-an-email' }, names: 'CONTACT_EMAIL' },
    { given: { NODE_ENV: 'production' }, names: 'SECRET' },
    // GET /metrics is never open in production.
    { given: { NODE_ENV: 'production', SECRET: 'a-production-secret-of-32-characters' }, names: 'METRICS_TOKEN' },
    { given: { NODE_ENV: 'production', SECRET: 'a-production-secret-of-32-characters', METRICS_TOKEN: '' }, names: 'METRICS_TOKEN' },
    { given: { SECRET: 'too short' }, names: 'SECRET' },
    { given: { STORAGE_DRIVER: 's3' }, names: 'S3_BUCKET' },
    { given: { EMAIL_PROVIDER: 'smtp' }, names: 'SMTP_URL' },
    { given: { GITHUB_CLIENT_ID: 'only-the-id' }, names: 'GITHUB_CLIENT_ID' },
    { given: { WORKER: 'process' }, names: 'WORKER' },
    { given: { WORKER_BATCH_SIZE: '0' }, names: 'WORKER_BATCH_SIZE' },
    { given: { DB_STATEMENT_TIMEOUT_MS: '30s' }, names: 'DB_STATEMENT_TIMEOUT_MS' },
    { given: { DB_LOCK_TIMEOUT_MS: '-1' }, names: 'DB_LOCK_TIMEOUT_MS' },
    { given: { DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: '2147483648' }, names: 'DB_IDLE_IN_TRANSACTION_TIMEOUT_MS' },
  ];
  for (const { given, names } of bad) {
    it(`stops on ${JSON.stringify(given)} naming ${names}`, () => {
      expect(() => loadConfig(given)).toThrow(ConfigError);
      expect(() => loadConfig(given)).toThrow(new RegExp(`^${names} `));
    });
  }

  // Settings read only in some setups (x-read-when in the schema) are ignored in the others, whatever their value.
  const ignored = [
    { given: { S3_ENDPOINT: 'not a url', S3_FORCE_PATH_STYLE: 'maybe' }, want: { storage: { driver: 'local' } } },
    { given: { GITHUB_URL: 'not a url', GOOGLE_ISSUER: 'ftp://x' }, want: { github: null, google: null } },
    { given: { STRIPE_API_URL: 'not a url' }, want: { billing: null } },
  ];
  for (const { given, want } of ignored) {
    it(`ignores ${JSON.stringify(given)}`, () => {
      expect(loadConfig(given)).toMatchObject(want);
    });
  }

  it('states what was wrong', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow('PORT must be an integer from 0 to 65535, got "eighty"');
    expect(() => loadConfig({ PORT: '1e3' })).toThrow('PORT must be an integer from 0 to 65535, got "1e3"');
    expect(() => loadConfig({ VALIDATE_RESPONSES: 'Maybe' })).toThrow('VALIDATE_RESPONSES must be true or false, got "maybe"');
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).toThrow('LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"');
    expect(() => loadConfig({ TRUSTED_ORIGINS: 'https://a.example.com, https://b.example.com/path' })).toThrow(
      'TRUSTED_ORIGINS must list origins like https://app.example.com, got "https://b.example.com/path"',
    );
    expect(() => loadConfig({ TRUST_PROXY: '100' })).toThrow('TRUST_PROXY must be at most 32 hops, got "100"');
    expect(() => loadConfig({ STORAGE_DRIVER: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'minio:9000' })).toThrow('S3_ENDPOINT must be an http(s) URL, got "minio:9000"');
    expect(() => loadConfig({ SECRET: 'too short' })).toThrow('SECRET must be at least 32 characters');
  });

  it('docs/configuration.md documents every setting, as generated from the schema', () => {
    const doc = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(doc, 'docs/configuration.md is stale: run `make codegen`').toBe(buildConfigurationDoc());
    for (const name of settingNames) {
      expect(settingSchema(name).description, name).toMatch(/\w/);
      expect(doc, name).toContain(`| \`${name}\` |`);
    }
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain('(docs/configuration.md)');
  });
});

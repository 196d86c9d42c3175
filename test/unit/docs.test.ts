/**
 * The partner docs' tables that mirror code stay in step with it: the error catalogue
 * (docs/errors.md against src/contract/errors.ts and the error schemas of both contracts), the
 * rate limits (docs/rate-limits.md against the limiters as the code builds them) and the paged
 * lists (docs/pagination.md against the contract's `limit` parameters).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errorCatalogue } from '../../src/contract/errors.ts';
import { configSchema } from '../../src/config/schema.ts';
import { ipLimiter } from '../../src/http/ip-limiter.ts';
import { identityLimiter } from '../../src/http/identity-limiter.ts';
import type { LimiterFactory } from '../../src/auth/rate-limit.ts';
import { MAX_STREAMS_PER_USER } from '../../src/jobs/stream-leases.ts';

const read = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');
const contracts = ['openapi.json', 'auth-openapi.json'].map((name) => JSON.parse(readFileSync(new URL(`../../generated/${name}`, import.meta.url), 'utf8')));

/** The rows of the markdown table that follows `heading`, as arrays of trimmed cells (header and rule left out). */
function table(text: string, heading: string): string[][] {
  const start = text.indexOf(heading);
  if (start < 0) throw new Error(`no "${heading}" section`);
  const lines = text.slice(start).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

interface JsonSchema {
  properties?: Record<string, JsonSchema>;
  allOf?: JsonSchema[];
  $ref?: string;
}

/** The property names of each error code's `data`, from the contracts' error schemas (null: the code carries none). */
function declaredData(): Map<string, string[] | null> {
  const found = new Map<string, string[] | null>();
  for (const document of contracts) {
    const resolve = (schema: JsonSchema): JsonSchema =>
      schema.$ref
        ? resolve(
            schema.$ref
              .split('/')
              .slice(1)
              .reduce((node, key) => node[key], document),
          )
        : schema;
    for (const schema of Object.values<JsonSchema>(document.components.schemas)) {
      const properties = Object.assign({}, ...[schema, ...(schema.allOf ?? [])].map((part) => resolve(part).properties ?? {})) as Record<string, JsonSchema & { const?: string }>;
      const code = properties.code?.const;
      if (typeof code !== 'string' || !properties.status) continue;
      found.set(code, properties.data ? Object.keys(resolve(properties.data).properties ?? {}) : null);
    }
  }
  return found;
}

describe('docs/errors.md', () => {
  const text = read('errors.md');
  const rows = table(text, '## Catalogue');
  const data = declaredData();

  it('lists exactly the codes of the catalogue', () => {
    expect(rows.map(([code]) => code).toSorted()).toEqual(Object.keys(errorCatalogue).toSorted());
  });

  it.each(Object.entries(errorCatalogue))('lists %s with its status, default message and data', (code, { status, message }) => {
    const row = rows.find(([name]) => name === code);
    expect(row, `no row for ${code}`).toBeDefined();
    const [, documentedStatus, documentedMessage, documentedData] = row!;
    expect(documentedStatus).toBe(String(status));
    expect(documentedMessage).toBe(message);
    const fields = data.get(code);
    if (fields === null || fields === undefined) expect(documentedData, `${code} carries no data in the contracts`).toBe('none');
    else for (const field of fields) expect(documentedData, `${code}'s data has ${field}`).toContain(field);
  });

  it('every code the contracts declare is in the catalogue', () => {
    for (const code of data.keys()) expect(Object.keys(errorCatalogue)).toContain(code);
  });
});

describe('docs/rate-limits.md', () => {
  const rows = table(read('rate-limits.md'), '## The limits');
  const documented = new Map(rows.map(([limiter, , limit, window]) => [limiter!.replace(/`/g, ''), { limit: limit!, window: window! }]));
  const perMinute = configSchema.properties.RATE_LIMIT_PER_MINUTE.default;
  const authPerMinute = configSchema.properties.AUTH_RATE_LIMIT_PER_MINUTE.default;
  const mailBudget = { perRecipient: configSchema.properties.MAIL_PER_RECIPIENT_LIMIT.default, windowMinutes: configSchema.properties.MAIL_PER_RECIPIENT_WINDOW_MINUTES.default };
  /** The settings the limiters of createServices read, at their defaults. */
  const defaults = { authRateLimitPerMinute: authPerMinute, rateLimitPerMinute: perMinute, mailBudget };

  /** The limiters a middleware builds, recorded by name, with the defaults of the settings. */
  function built(make: (factory: LimiterFactory) => unknown): Map<string, { limit: number; windowMs: number }> {
    const seen = new Map<string, { limit: number; windowMs: number }>();
    const factory = ((name: string, options: { limit: number; windowMs: number }) => {
      seen.set(name, options);
      return { hit: async () => ({ allowed: true }) };
    }) as unknown as LimiterFactory;
    make(factory);
    return seen;
  }
  const window = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : `${ms / 60_000} min`);
  // The service's own limiters (src/composition/services.ts) are built inside createServices with
  // literal numbers and the settings; read from its source, the one place they are written.
  const servicesSource = readFileSync(new URL('../../src/composition/services.ts', import.meta.url), 'utf8');
  const fromServices = new Map(
    [...servicesSource.matchAll(/limit\('([^']+)', \{ limit: ([^,]+), windowMs: ([^}]+) \}\)/g)].map(([, name, limit, windowMs]) => {
      // Arithmetic over the settings' defaults (`config.authRateLimitPerMinute * 5`, `15 * 60_000`), from our own source.
      // eslint-disable-next-line @typescript-eslint/no-implied-eval -- evaluates arithmetic copied from our own source (above), on purpose
      const evaluate = (expression: string) => Number(new Function('config', `return ${expression.replace(/_/g, '')};`)(defaults));
      return [name!, { limit: evaluate(limit!), windowMs: evaluate(windowMs!) }];
    }),
  );

  const all = new Map([...built((factory) => ipLimiter(perMinute, factory)), ...built((factory) => identityLimiter(authPerMinute, factory)), ...fromServices]);

  it('reads every limiter the service builds', () => {
    expect([...all.keys()].toSorted()).toEqual(['contact', 'identity', 'identity.sensitive', 'ip', 'mail.recipient', 'search', 'sign-in.address', 'sign-in.email']);
  });

  it.each([...all.keys()])('%s: its default limit and window', (name) => {
    const { limit, windowMs } = all.get(name)!;
    const row = documented.get(name);
    expect(row, `no row for ${name}`).toBeDefined();
    expect(row!.limit).toMatch(new RegExp(`^${limit}( |$)`));
    expect(row!.window).toBe(window(windowMs));
  });

  it('the concurrent stream cap', () => {
    expect(documented.get('streams')?.limit).toMatch(new RegExp(`^${MAX_STREAMS_PER_USER}( |$)`));
  });
});

describe('docs/pagination.md', () => {
  const rows = table(read('pagination.md'), '## The paged lists');
  const paged = contracts.flatMap((document) =>
    Object.values<Record<string, { operationId?: string; parameters?: { $ref?: string; name?: string; schema?: { default: number; maximum: number } }[] }>>(document.paths)
      .flatMap((item) => Object.values(item))
      .filter((operation) => operation?.operationId)
      .flatMap((operation) => {
        const parameters = (operation.parameters ?? []).map((parameter) =>
          parameter.$ref
            ? parameter.$ref
                .split('/')
                .slice(1)
                .reduce((node: any, key) => node[key], document)
            : parameter,
        );
        const limit = parameters.find((parameter: { name?: string }) => parameter.name === 'limit');
        if (!limit) return [];
        const style = parameters.some((parameter: { name?: string }) => parameter.name === 'cursor') ? 'cursor' : 'offset';
        return [[operation.operationId!, style, String(limit.schema.default), String(limit.schema.maximum)]];
      }),
  );

  it('lists every operation that takes a limit, with its style, default and maximum', () => {
    expect(rows.map(([operation, style, byDefault, maximum]) => [operation!.replace(/`/g, ''), style, byDefault, maximum]).toSorted()).toEqual(paged.toSorted());
  });
});

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errorCatalogue } from '../../src/contract/errors.ts';

describe('docs/errors.md', () => {
  const text = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  it.each(Object.entries(errorCatalogue))('lists %s with its status', (code, { status }) => {
    expect(text).toMatch(new RegExp(`^\\| ${code} \\| ${status} \\|`, 'm'));
  });
});

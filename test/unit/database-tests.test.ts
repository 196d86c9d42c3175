/**
 * `make test-pg` runs only the test files that can open a database (scripts/database-tests.ts: their
 * imports reach src/db/connection.ts). A file that reached a database another way would silently
 * run on the embedded database only: none of the files left out may name such a way.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { databaseTestFiles } from '../../scripts/database-tests.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const all = readdirSync(join(root, 'test'), { recursive: true })
  .map(String)
  .filter((path) => path.endsWith('.test.ts'))
  .map((path) => `test/${path}`);
const selected = databaseTestFiles();

/** Ways to a database other than an import of src/db/connection.ts. */
const OTHER_WAYS = [/TEST_DATABASE_URL/, /\bserveProcess\b|serve-process/, /from ['"]postgres['"]/, /\bcreateTestDatabase\b|\bopenDatabase\b/, /@electric-sql\/pglite/];

describe('the test files make test-pg runs', () => {
  it('include those that open a database through the test support or the app', () => {
    for (const file of ['test/concurrency/credits.test.ts', 'test/process/worker-child.test.ts', 'test/db/embedded.test.ts', 'test/auth/organizations/teams.test.ts']) expect(selected).toContain(file);
  });

  it('leave out only files that name no other way to a database', () => {
    // This file names them, as patterns.
    const left = all.filter((file) => !selected.includes(file) && file !== 'test/unit/database-tests.test.ts');
    expect(left.length).toBeGreaterThan(0);
    for (const file of left) {
      const text = readFileSync(join(root, file), 'utf8');
      expect(
        OTHER_WAYS.filter((way) => way.test(text)),
        file,
      ).toEqual([]);
    }
  });

  it('leave out the files that do not touch a database (the AI service, the contract tools)', () => {
    for (const file of ['test/ai-service/parser-agreement.test.ts', 'test/contract/job-kind.test.ts', 'test/contract/contract-diff.test.ts']) expect(selected).not.toContain(file);
  });
});

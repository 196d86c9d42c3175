/**
 * The test files that can open a database: those whose imports reach src/db/connection.ts (every
 * way to a database goes through openDatabase), printed one per line. `make test-pg` runs these
 * against a real PostgreSQL server; the others (the AI service's parsers and model, the contract's
 * tools on throwaway copies, pure units) would only run a second time exactly as `make test` ran
 * them, since nothing in them reads TEST_DATABASE_URL.
 *
 * Imports are read from the source: static `import ... from '<relative>'`, `export ... from` and
 * `import('<relative>')` with a literal path. A test that reached a database some other way (a
 * `serve` process given DATABASE_URL, its own postgres client) would be missed, so
 * test/unit/database-tests.test.ts checks that no file this leaves out names one of those.
 *   node scripts/database-tests.ts            (the files, relative to the repository)
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const target = join(root, 'src/db/connection.ts');

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** The repository's files a module imports by relative path. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((match) => resolve(dirname(file), match[1]!)).filter((path) => /\.(ts|js|mjs)$/.test(path));
}

/** Whether `file`'s imports reach the database module (memoised over the whole walk). */
function reachesDatabase(file: string, known: Map<string, boolean>): boolean {
  const cached = known.get(file);
  if (cached !== undefined) return cached;
  // A cycle: assume not while it is being walked; the walk through the rest decides.
  known.set(file, false);
  let found = file === target;
  for (const next of found ? [] : importsOf(file)) {
    try {
      if (reachesDatabase(next, known)) {
        found = true;
        break;
      }
    } catch {
      // A path that is not a file of ours (a JSON fixture read as text, a generated file missing).
    }
  }
  known.set(file, found);
  return found;
}

export function databaseTestFiles(): string[] {
  const known = new Map<string, boolean>();
  // The upgrade runs under test/upgrade/ (make test-upgrade) are not part of the suite (vitest.config.ts).
  return readdirSync(join(root, 'test'), { recursive: true })
    .map(String)
    .filter((path) => path.endsWith('.test.ts') && !path.startsWith('upgrade/'))
    .map((path) => join(root, 'test', path))
    .filter((file) => reachesDatabase(file, known))
    .map((file) => relative(root, file))
    .sort();
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const file of databaseTestFiles()) console.log(file);
}

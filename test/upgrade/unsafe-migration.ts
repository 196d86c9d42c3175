/**
 * The throwaway migration of unsafe-migration.test.ts, shaped like sql/0014_text_search_languages.sql:
 * a generated stored column dropped and added again, which rewrites document_chunks and rebuilds
 * every index on it while holding its ACCESS EXCLUSIVE lock (docs/deploying.md; 0014 took 144 s
 * on 50 119 chunks). The same column comes back, so both releases' code runs on the result.
 */
import { readdir } from 'node:fs/promises';

export const UNSAFE_MIGRATION = `-- A throwaway migration of test/upgrade/unsafe-migration.test.ts (never shipped): rewrites
-- document_chunks as 0014 did.
alter table document_chunks drop column search_length;
alter table document_chunks
  add column search_length integer generated always as (length(to_tsvector(search_config, coalesce(search_text, text)))) stored;
`;

/** \`NNNN_<name>.sql\`, numbered after the last migration in \`dir\`. */
export async function nextMigrationName(dir: string, name: string): Promise<string> {
  const numbers = (await readdir(dir)).map((file) => /^(\d{4})_.*\.sql$/.exec(file)?.[1]).filter((number): number is string => number !== undefined);
  const next = Math.max(0, ...numbers.map(Number)) + 1;
  return `${String(next).padStart(4, '0')}_${name}.sql`;
}

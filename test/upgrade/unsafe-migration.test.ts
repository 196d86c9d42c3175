/**
 * The upgrade run can fail: the same harness, with old = this tree and new = a throwaway copy of it
 * that adds one more migration shaped like sql/0014_text_search_languages.sql (a generated stored
 * column of document_chunks dropped and added again: PostgreSQL rewrites the table and every index
 * on it, the HNSW graph included, under an exclusive lock). Searches wait for the lock while the
 * old release serves, and the verdict must name them: slower than 2 s, or 5xx, during `migrate`.
 * UPGRADE_UNSAFE_CHUNKS (default 30 000) keeps it short while the rewrite still takes seconds: at
 * 15 000 it took about 4 s, so a search sent past its second second was held less than the 2 s
 * the verdict allows, and a run once had a single search held long enough (2.12 s) to fail it.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { throwawayCopy, type ThrowawayCopy } from '../support/throwaway-copy.ts';
import { nextMigrationName, UNSAFE_MIGRATION } from './unsafe-migration.ts';
import { numberSetting, runAndPrint, upgradeServer } from './settings.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('an upgrade whose migration rewrites document_chunks', () => {
  let server: Awaited<ReturnType<typeof upgradeServer>>;
  let copy: ThrowawayCopy;
  let migration: string;
  beforeAll(async () => {
    [server, copy] = await Promise.all([upgradeServer(), throwawayCopy('workspace-api-upgrade-')]);
    migration = await nextMigrationName(join(root, 'sql'), 'throwaway_rewrite_chunks');
    await writeFile(join(copy.dir, 'sql', migration), UNSAFE_MIGRATION);
  });
  afterAll(async () => {
    await Promise.allSettled([server?.stop(), copy?.remove()]);
  });

  it('fails, naming the requests that were slow or failed while migrate ran', async () => {
    const result = await runAndPrint('unsafe migration', {
      serverUrl: server.url,
      old: { name: 'old', dir: root },
      new: { name: 'new', dir: copy.dir },
      sizes: [numberSetting('UPGRADE_UNSAFE_CHUNKS', 30_000), 1_000],
      clients: numberSetting('UPGRADE_CLIENTS', 3),
      seconds: { old: 8, mixed: 5, new: 5 },
    });
    expect(result.migrate.applied).toEqual([migration.replace(/\.sql$/, '')]);
    expect(result.verdict.passed).toBe(false);
    const duringMigrate = result.verdict.failures.filter((failure) => failure.startsWith('migrate: '));
    expect(
      duringMigrate.some((failure) => /^migrate: documents\.search via \S+ at \+[\d.]+ s: (took \d+\.\d+ s|5\d\d )/.test(failure)),
      duringMigrate.join('\n'),
    ).toBe(true);
  });
});

// A fresh, already-migrated embedded database for one test file, cloned from
// the template that test/global-setup.ts builds once per run.
import { openAsBlob } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { inject } from 'vitest';
import { openDatabase, type Database } from '../../src/db/connection.ts';

/** Opens an isolated copy of the migrated template; close() also deletes its temp directory. */
export async function createTestDatabase(): Promise<Database> {
  const dataDir = await mkdtemp(join(inject('testScratchRoot'), 'workspace-api-test-'));
  try {
    // PGlite unpacks the tarball into the empty dataDir before starting.
    const db = await openDatabase({ dataDir, loadDataDir: await openAsBlob(inject('templateDataDir')) });
    return {
      ...db,
      async close() {
        try {
          await db.close();
        } finally {
          await rm(dataDir, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

/** An embedded database in a scratch data directory of its own, deleted with it. (No vitest here: bench/ uses it too.) */
import { rm } from 'node:fs/promises';
import type { Database } from '../../src/db/connection.ts';

/** `db`, whose close() also deletes `dataDir` once the database has closed (or failed to). */
export function deletingDataDirOnClose(db: Database, dataDir: string): Database {
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
}

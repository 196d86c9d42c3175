/**
 * The floor of `serve`'s start (bench/start.ts): a process that does nothing but open the embedded
 * database as `serve` does (src/db/connection.ts openDatabase, a new data directory from the
 * migrated template) and answer one query, then prints `ready` and exits. Spawn to `ready` is what
 * a start could not beat on this machine; the service's start is reported as a ratio to it.
 *   node bench/start-floor.ts <dataDir>
 */
import { openDatabase } from '../src/db/connection.ts';
import { embeddedDatabaseExists } from '../src/db/embedded.ts';
import { createLogger } from '../src/logger.ts';

const dataDir = process.argv[2];
if (!dataDir) throw new Error('usage: node bench/start-floor.ts <dataDir>');
const logger = createLogger('silent');
// The template's module only for a new directory, as `serve` loads it (commands.ts openDatabaseFor).
const loadDataDir = (await embeddedDatabaseExists(dataDir)) ? undefined : await (await import('../src/composition/database-template.ts')).templateBlob({ logger });
const db = await openDatabase({ dataDir, logger, ...(loadDataDir ? { loadDataDir } : {}) });
await db.sql`select 1`;
console.log('ready');
await db.close();

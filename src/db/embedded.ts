// The embedded database used when no DATABASE_URL is set (single machine, tests):
// PGlite, PostgreSQL compiled to WebAssembly, running in this process and served
// over the PostgreSQL wire protocol on a loopback port, so the rest of the
// service talks to it through the same driver as to a real server.
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pgcrypto } from '@electric-sql/pglite/contrib/pgcrypto';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { lockDataDir, type DataDirLock } from './data-dir-lock.ts';

export interface EmbeddedDatabaseOptions {
  /** The service's data directory; PostgreSQL's files go in `<dataDir>/pg`. */
  dataDir: string;
  /** A tarball from `dumpDataDir()` to start from (tests clone a migrated template); `<dataDir>/pg` must not hold a database yet. */
  loadDataDir?: Blob;
}

export interface EmbeddedDatabase {
  /** postgres:// URL of the loopback server. It accepts one connection at a time. */
  url: string;
  /** Stops accepting connections (end your clients first), then returns the data directory as an uncompressed tarball. Only close() may follow. */
  dumpDataDir(): Promise<Blob>;
  /** Stops the server and PGlite. Safe to call more than once. */
  close(): Promise<void>;
}

// Every extension a migration may create must be loaded here: PGlite cannot
// load one later. Production servers ship both (pgcrypto is contrib).
const extensions = { vector, pgcrypto };

/** The extensions every embedded database loads (part of the migrated template's key). */
export const embeddedExtensionNames: readonly string[] = Object.keys(extensions);

export function embeddedPgDataPath(dataDir: string): string {
  return join(dataDir, 'pg');
}

// Present while a start creates `<dataDir>/pg` (initdb, or unpacking a template). A start that
// finds it was cut off halfway (killed, power loss): what is there is not a database, and it is
// created again instead of failing on every later start.
function creatingMarkerPath(dataDir: string): string {
  return `${embeddedPgDataPath(dataDir)}.creating`;
}

/**
 * True when `<dataDir>/pg` holds a database (so `loadDataDir` must not be passed), false when a
 * start would create one: no files there, or only what a cut-off creation left.
 */
export async function embeddedDatabaseExists(dataDir: string): Promise<boolean> {
  if (await exists(creatingMarkerPath(dataDir))) return false;
  const entries = await readdir(embeddedPgDataPath(dataDir)).catch(() => []);
  return entries.length > 0;
}

export async function startEmbeddedDatabase(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
  const pgDataPath = embeddedPgDataPath(options.dataDir);
  await mkdir(options.dataDir, { recursive: true });
  const lock = await lockDataDir(`${pgDataPath}.lock`);

  let db: PGlite | undefined;
  let server: PGLiteSocketServer;
  try {
    const marker = creatingMarkerPath(options.dataDir);
    const creating = !(await embeddedDatabaseExists(options.dataDir));
    if (creating) {
      await rm(pgDataPath, { recursive: true, force: true });
      await writeFile(marker, `${process.pid}\n`);
    }
    db = await PGlite.create(pgDataPath, {
      extensions,
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    });
    // A failed creation keeps the marker: the next start begins again from an empty directory.
    if (creating) await rm(marker, { force: true });
    // maxConnections 1: the socket multiplexer mixes up concurrent connections'
    // extended-protocol messages (pglite #1046, PR #977), so only one client
    // connection is allowed; port 0 lets the OS pick a free port.
    server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 1 });
    await server.start();
  } catch (error) {
    await db?.close().catch(() => undefined);
    await lock.release();
    throw error;
  }
  const pglite = db;

  let serving = true;
  const stopServing = async () => {
    if (!serving) return;
    serving = false;
    await server.stop();
  };
  let closing: Promise<void> | undefined;

  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    async dumpDataDir() {
      await stopServing();
      return pglite.dumpDataDir('none');
    },
    close() {
      closing ??= shutDown(stopServing, pglite, lock);
      return closing;
    },
  };
}

async function shutDown(stopServing: () => Promise<void>, db: PGlite, lock: DataDirLock): Promise<void> {
  try {
    await stopServing();
    await db.close();
  } finally {
    await lock.release();
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false);
}

/**
 * What the embedded database's thread (embedded-thread.ts) and its owner (embedded.ts) say to
 * each other, and the extensions the thread loads: shared by both, so neither imports the other.
 */

/** The extensions every embedded database loads (part of the migrated template's key); embedded-thread.ts loads them. */
export const embeddedExtensionNames = ['vector', 'pgcrypto'] as const;
export type EmbeddedExtensionName = (typeof embeddedExtensionNames)[number];

export interface ThreadSetup {
  /** `<dataDir>/pg`. */
  pgDataPath: string;
  /** The template tarball's bytes, moved to this thread (a file-backed Blob cannot be posted). */
  loadDataDir: ArrayBuffer | undefined;
  /** PostgreSQL's fsync: true, a commit is on the disk before it is acknowledged; false, only in the page cache (PGlite's own default). */
  fsync: boolean;
}

/** To the thread. `crash` is for tests: the thread dies of an uncaught error at its next turn. */
export type ThreadRequest = { type: 'dump' } | { type: 'close' } | { type: 'crash' };

/** From the thread. Errors arrive as structured clones (see postError). */
export type ThreadMessage = { type: 'listening'; address: string } | { type: 'failed'; error: Error } | { type: 'dumped'; tarball: Blob } | { type: 'closed' } | { type: 'error'; error: Error };

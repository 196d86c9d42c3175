// Runs once per test run: builds one migrated embedded database and dumps it to
// a tarball. Each test file then clones it (test/support/database.ts), which
// costs about a second instead of the 4-6 s of a fresh PGlite initdb.
import { mkdtemp, readdir, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { embeddedClientOptions } from '../src/db/connection.ts';
import { startEmbeddedDatabase } from '../src/db/embedded.ts';
import { migrate } from '../src/db/migrations.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Path of the migrated template database's tarball (PGlite dumpDataDir). */
    templateDataDir: string;
    /** Where test databases put their throwaway data directories. */
    testScratchRoot: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const scratchRoot = await chooseScratchRoot();
  await removeAbandonedDirs(scratchRoot);
  const dir = await mkdtemp(join(scratchRoot, 'workspace-api-template-'));
  const embedded = await startEmbeddedDatabase({ dataDir: join(dir, 'data') });
  try {
    const sql = postgres(embedded.url, embeddedClientOptions);
    try {
      await migrate(sql);
    } finally {
      await sql.end();
    }
    const tarball = await embedded.dumpDataDir();
    const tarballPath = join(dir, 'template.tar');
    await writeFile(tarballPath, new Uint8Array(await tarball.arrayBuffer()));
    project.provide('templateDataDir', tarballPath);
    project.provide('testScratchRoot', scratchRoot);
  } finally {
    await embedded.close();
  }
  return async () => {
    await rm(dir, { recursive: true, force: true });
  };
}

// Writing PGlite's 40 MB of files took this machine's disk about twice as long
// as tmpfs (a clone: 1.6-2.3 s against 1.0-1.4 s), and test databases need not
// survive a reboot. Containers often get a 64 MB /dev/shm, too small for a few
// clones side by side: then the usual temp directory.
async function chooseScratchRoot(): Promise<string> {
  try {
    const stats = await statfs('/dev/shm');
    if (stats.bavail * stats.bsize > 2 ** 30) return '/dev/shm';
  } catch {
    // no /dev/shm (macOS, Windows)
  }
  return tmpdir();
}

// A run that is killed (Ctrl-C twice, a closed pipe) skips teardown and leaves
// its 40 MB directories behind, in RAM when on /dev/shm. No run lasts hours.
async function removeAbandonedDirs(root: string): Promise<void> {
  const cutoff = Date.now() - 6 * 60 * 60 * 1000;
  for (const name of await readdir(root).catch(() => [])) {
    if (!/^workspace-api-(template|test)-/.test(name)) continue;
    const path = join(root, name);
    const stats = await stat(path).catch(() => undefined);
    if (stats && stats.mtimeMs < cutoff) await rm(path, { recursive: true, force: true });
  }
}

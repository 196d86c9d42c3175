// Runs once per test run: finds (or builds, once per migration change) the migrated
// embedded template the service starts from (src/composition/database-template.ts). Each test file
// then clones it (test/support/database.ts), which costs about a second instead
// of the 4-6 s of a fresh PGlite initdb.
//
// With TEST_DATABASE_URL (a disposable PostgreSQL 15+ server with pgvector, e.g.
// `make test-pg`), it also migrates a template DATABASE on that server, and test
// files get their own `CREATE DATABASE ... TEMPLATE` copy of it instead. The
// embedded template is built either way: tests about the embedded database
// itself still use it.
import { randomBytes } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { mkdtemp, readdir, rm, stat, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { createMigratedDatabase, quoteIdentifier } from './support/migrated-database.ts';
import { ensureTemplate } from '../src/composition/database-template.ts';
import { openDatabase } from '../src/db/connection.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Path of the migrated template database's tarball (PGlite dumpDataDir). */
    templateDataDir: string;
    /** The same template unpacked into a closed data directory of this run, which test databases copy (test/support/database.ts). */
    templateDir: string;
    /** Where test databases put their throwaway data directories. */
    testScratchRoot: string;
    /**
     * With TEST_DATABASE_URL: the migrated template database on that server; each test database's
     * name starts with `${templateDatabase}_`. Empty without TEST_DATABASE_URL.
     */
    templateDatabase: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const scratchRoot = await chooseScratchRoot();
  await removeAbandonedDirs(scratchRoot);
  const externalUrl = process.env.TEST_DATABASE_URL || undefined;
  // The two templates side by side: the server's takes about a second, PGlite's several.
  const [embedded, external] = await Promise.allSettled([embeddedTemplate(scratchRoot), externalUrl ? externalTemplate(externalUrl) : Promise.resolve('')]);
  const template = external.status === 'fulfilled' ? external.value : '';
  const teardown = async () => {
    if (embedded.status === 'fulfilled') await rm(embedded.value.dir, { recursive: true, force: true });
    if (externalUrl && template) await dropRunDatabases(externalUrl, template);
  };
  if (embedded.status === 'rejected' || external.status === 'rejected') {
    await teardown();
    throw embedded.status === 'rejected' ? embedded.reason : (external as PromiseRejectedResult).reason;
  }
  project.provide('templateDataDir', embedded.value.tarball);
  project.provide('templateDir', embedded.value.dir);
  project.provide('testScratchRoot', scratchRoot);
  project.provide('templateDatabase', template);
  return teardown;
}

/**
 * The migrated embedded template the service itself starts from (src/composition/database-template.ts): cached
 * under node_modules/.cache by migration checksums, so a run after the first pays nothing for it.
 * Unpacked once here (about a second), so each test database is a copy of a directory.
 */
async function embeddedTemplate(scratchRoot: string): Promise<{ tarball: string; dir: string }> {
  const tarball = (await ensureTemplate()).path;
  const dir = await mkdtemp(join(scratchRoot, 'workspace-api-template-'));
  try {
    const db = await openDatabase({ dataDir: dir, loadDataDir: await openAsBlob(tarball) });
    await db.close();
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return { tarball, dir };
}

/** Creates and migrates `wsapi_<random>` on the server; answers its name. Nothing stays connected to it. */
async function externalTemplate(url: string): Promise<string> {
  const name = `wsapi_${randomBytes(5).toString('hex')}`;
  try {
    await createMigratedDatabase(url, name);
  } catch (error) {
    await dropRunDatabases(url, name);
    throw error;
  }
  return name;
}

/** Drops the template and every test database of this run that a killed worker left behind. */
async function dropRunDatabases(url: string, template: string): Promise<void> {
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const rows = await admin<{ datname: string }[]>`
      select datname from pg_database where datname = ${template} or starts_with(datname, ${template + '_'})`;
    for (const { datname } of rows) await admin.unsafe(`drop database if exists ${quoteIdentifier(datname)} with (force)`);
  } finally {
    await admin.end();
  }
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

// The migrated template of the embedded database. A fresh PGlite runs initdb, which costs 3.5-6 s;
// loading a dumped, already-migrated data directory (PGlite `loadDataDir`) costs about 0.4 s. So
// the template is built once and kept as a tarball in the cache folder of node_modules (it
// survives `make clean`; `npm ci` starts it over), named by a key over everything that shapes
// it: the PGlite, pgvector and pg-boss versions (pg-boss's schema is made in it too), the
// extensions loaded, and every migration file's name and checksum. A stale template is never used: a new migration gives a new key.
//
// `node src/composition/database-template.ts` builds it if missing (run after install, so the first start is fast);
// `serve` builds it on a miss too, then starts from it.
import { createHash, randomBytes } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { embeddedClientOptions } from '../db/connection.ts';
import { embeddedExtensionNames } from '../db/embedded-protocol.ts';
import { startEmbeddedDatabase } from '../db/embedded.ts';
import { defaultMigrationsDir, migrate, readMigrationFiles } from '../db/migrations.ts';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** Bump when the way the template is made changes in a way the key does not see. */
const FORMAT = 1;

/** `<repository>/node_modules/.cache/workspace-api`: the conventional per-project cache, removed with node_modules. */
export const templateCacheDir: string = fileURLToPath(new URL('../../node_modules/.cache/workspace-api/', import.meta.url));

export interface TemplateLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export interface TemplateOptions {
  /** Where the migrations are (sql/ by default). */
  migrationsDir?: string | URL;
  /** Where the tarball is kept (templateCacheDir by default). */
  cacheDir?: string;
  logger?: TemplateLogger;
}

/** sha256 (hex) over what the template's contents depend on. */
export async function templateKey(migrationsDir: string | URL = defaultMigrationsDir): Promise<string> {
  const [pglite, pgvector, pgBoss, migrations] = await Promise.all([
    packageVersion('@electric-sql/pglite'),
    packageVersion('@electric-sql/pglite-pgvector'),
    packageVersion('pg-boss'),
    readMigrationFiles(migrationsDir),
  ]);
  const parts = {
    format: FORMAT,
    pglite,
    pgvector,
    pgBoss,
    extensions: embeddedExtensionNames,
    migrations: migrations.map((file) => [file.fileName, file.checksum]),
  };
  return sha256(JSON.stringify(parts));
}

export function templatePath(key: string, cacheDir: string = templateCacheDir): string {
  return join(cacheDir, `pg-template-${key.slice(0, 24)}.tar`);
}

/**
 * The path of the template for the current migrations, built first when missing (3.5-6 s, once).
 * Throws when it cannot be written; see templateBlob for the lenient variant.
 */
export async function ensureTemplate(options: TemplateOptions = {}): Promise<{ path: string; built: boolean }> {
  const path = templatePath(await templateKey(options.migrationsDir), options.cacheDir);
  if (await cachedBlob(path)) return { path, built: false };
  const tarball = await buildTemplate(options);
  await saveTemplate(path, tarball);
  return { path, built: true };
}

/**
 * The template as a Blob for `loadDataDir`: the cached file, or one built now (and cached when the
 * cache folder is writable; a read-only install still starts, at the cost of a build each time).
 */
export async function templateBlob(options: TemplateOptions = {}): Promise<Blob> {
  const path = templatePath(await templateKey(options.migrationsDir), options.cacheDir);
  const cached = await cachedBlob(path);
  if (cached) return cached;
  const started = performance.now();
  options.logger?.info({ path }, 'no migrated template of the embedded database yet: building it (once per migration change)');
  const tarball = await buildTemplate(options);
  try {
    await saveTemplate(path, tarball);
  } catch (error) {
    options.logger?.warn({ path, error: error instanceof Error ? error.message : String(error) }, 'could not cache the migrated template; using it from memory');
  }
  options.logger?.info({ path, ms: Math.round(performance.now() - started) }, 'migrated template built');
  return tarball;
}

/** initdb and every migration in a throwaway data directory, dumped as an uncompressed tarball. */
export async function buildTemplate(options: Pick<TemplateOptions, 'migrationsDir'> = {}): Promise<Blob> {
  const scratch = await mkdtemp(join(tmpdir(), 'workspace-api-template-build-'));
  try {
    const embedded = await startEmbeddedDatabase({ dataDir: scratch });
    try {
      const sql = postgres(embedded.url, embeddedClientOptions);
      try {
        await migrate(sql, options.migrationsDir ? { dir: options.migrationsDir } : {});
        // pg-boss's own schema too: a database started from the template skips making it. Loaded
        // here, for a build only: a start from the cached template does without pg-boss's modules.
        const { installQueueSchema } = await import('../jobs/queue.ts');
        await installQueueSchema(sql);
      } finally {
        await sql.end();
      }
      return await embedded.dumpDataDir();
    } finally {
      await embedded.close();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Writes atomically (a reader never sees half a file), then removes templates of other keys. */
async function saveTemplate(path: string, tarball: Blob): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const partial = `${path}.${process.pid}-${randomBytes(4).toString('hex')}.partial`;
  try {
    await writeFile(partial, new Uint8Array(await tarball.arrayBuffer()));
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  // Each is 40 MB; an older one only comes back into use when the migrations go back.
  for (const name of await readdir(dir).catch(() => [])) {
    if (/^pg-template-.*\.tar$/.test(name) && join(dir, name) !== path) await rm(join(dir, name), { force: true });
  }
}

async function cachedBlob(path: string): Promise<Blob | undefined> {
  try {
    return await openAsBlob(path); // throws at once (not a rejection) when there is no such file
  } catch {
    return undefined;
  }
}

async function packageVersion(name: string): Promise<string> {
  // The packages' `exports` do not list package.json: walk up from their entry point. (Resolved
  // with require: import.meta.resolve is missing where vitest loads this, in its global setup.)
  let dir = dirname(require.resolve(name));
  for (;;) {
    const manifest = await readFile(join(dir, 'package.json'), 'utf8').then(
      (text) => JSON.parse(text) as { name?: string; version?: string },
      () => undefined,
    );
    if (manifest?.name === name && manifest.version) return manifest.version;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`Cannot find the version of ${name}`);
    dir = parent;
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

if (import.meta.main) {
  const started = performance.now();
  const { path, built } = await ensureTemplate();
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(built ? `built the migrated template of the embedded database in ${seconds} s: ${path}` : `the migrated template is up to date: ${path}`);
}

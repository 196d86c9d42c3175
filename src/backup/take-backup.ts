/**
 * A consistent backup of the embedded defaults: the PGlite database and the local uploads, taken
 * by the process that has the database open (`serve`, through the control channel, or `backup`
 * itself when the service is stopped). docs/backups.md says what it holds and why it is consistent.
 *
 * Why the database's own connection, and not PGlite's dumpDataDir(): every query of the embedded
 * database goes through one connection (embedded.ts serves one), so while the backup holds it
 * (postgres.js `reserve`) nothing else runs on PGlite and no file of its data directory changes.
 * Holding it, a CHECKPOINT writes every page to its file and the copy is brought up to date: what a
 * clean checkpoint leaves, with a WAL that has nothing after it. Most of the copy is made before the
 * hold, while the database works; the hold only copies again the files changed since (holdAndCopy),
 * so requests wait for that part only (they queue, within their deadline). dumpDataDir() takes
 * PGlite's query lock only, not its transaction lock: it may copy between two statements of a
 * client's transaction, without a checkpoint (a crash image, replayed from the WAL at the next
 * start); it builds the whole tarball in memory while every query waits; and the embedded thread's
 * `dump` stops its server for good (embedded-thread.ts).
 *
 * The uploads are hard-linked during the same hold (no bytes copied), and copied from the links
 * after it: the pair is the state at one instant. A document whose row is in the copy was stored
 * before it (documents.complete stores the file, then marks the row ready), so its file is linked;
 * one completed during the backup has its row queued behind the hold, and is absent from the copy
 * or still pending there with its file beside it (complete again after restoring: it is
 * idempotent). The one exception is a documents.delete in flight: it deletes the files before the
 * rows, so its ready row can be copied without its file; the manifest lists such documents.
 */
import { copyFile, lstat, mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { Database, Sql } from '../db/connection.ts';
import { withDeadline } from '../db/deadline.ts';
import { embeddedPgDataPath } from '../db/embedded.ts';
import { migrationStatus } from '../db/migrations.ts';
import type { Logger } from '../logger.ts';
import { version } from '../version.ts';
import { catchUp, copyTree, linkUploads, measureTree, statTree, syncPath, syncTree } from './file-trees.ts';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, MANIFEST_FILE, type BackupManifest } from './manifest.ts';

export interface TakeBackupOptions {
  /** DATA_DIR: `pg/` (the database), `uploads/` (local storage) and `secret`. */
  dataDir: string;
  /** The embedded database open on dataDir. */
  db: Database;
  /** Where the backup goes: a new directory (or an empty one). */
  destination: string;
  /** True when documents are stored as files under DATA_DIR/uploads (STORAGE_DRIVER local). */
  localUploads: boolean;
  logger: Logger;
}

/** A backup was asked for while this process takes one (the control channel's, or a scheduled one). */
export class BackupInProgressError extends Error {
  override name = 'BackupInProgressError';
}

/** One backup at a time in a process: each holds the database for a moment and writes a full copy. */
let inProgress = false;

/**
 * Takes the backup into `destination`; it appears there complete (with its manifest) or not at
 * all. Rejects with BackupInProgressError while another runs in this process.
 */
export async function takeBackup(options: TakeBackupOptions): Promise<BackupManifest> {
  if (options.db.kind !== 'embedded') throw new Error('takeBackup copies the embedded database; a database server has its own backups (docs/backups.md).');
  if (inProgress) throw new BackupInProgressError('A backup is already running in this process; wait for it to finish.');
  inProgress = true;
  try {
    return await backUp(options);
  } finally {
    inProgress = false;
  }
}

async function backUp(options: TakeBackupOptions): Promise<BackupManifest> {
  const destination = resolve(options.destination);
  await refuseExisting(destination);
  await mkdir(dirname(destination), { recursive: true });
  // Beside the destination, so the finished backup is renamed into place at once.
  const staging = await mkdtemp(join(dirname(destination), `.${basename(destination)}.partial-`));
  const uploads = join(options.dataDir, 'uploads'); // the local driver's location (local-driver.ts)
  let links: string | undefined;
  const started = performance.now();
  try {
    // On the uploads' file system, for the links. Any left by a backup cut off (this process is the
    // only one taking backups of this DATA_DIR: it holds its lock) only hold space.
    for (const name of await readdir(options.dataDir)) if (name.startsWith('.backup-links-')) await rm(join(options.dataDir, name), { recursive: true, force: true });
    if (options.localUploads) links = await mkdtemp(join(options.dataDir, '.backup-links-'));
    const held = await holdAndCopy(options.db.sql, embeddedPgDataPath(options.dataDir), join(staging, 'pg'), links ? { uploads, links } : undefined);
    options.logger.info({ destination, heldMs: held.heldMs, recopied: held.recopied }, 'backup: database copied');
    let uploadsPart: BackupManifest['uploads'] = null;
    if (links) {
      await copyTree(links, join(staging, 'uploads'));
      const missingReady = held.readyKeys.filter((key) => !held.linked.has(key));
      uploadsPart = { ...(await measureTree(join(staging, 'uploads'))), readyDocuments: held.readyKeys.length, missingReady };
      if (missingReady.length > 0) options.logger.warn({ missingReady }, 'backup: ready documents without their file (deleted while the backup ran)');
    }
    const secret = await copySecret(options.dataDir, staging);
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      formatVersion: BACKUP_FORMAT_VERSION,
      serviceVersion: version,
      takenAt: held.takenAt.toISOString(),
      database: { ...(await measureTree(join(staging, 'pg'))), lastMigration: held.lastMigration },
      uploads: uploadsPart,
      secret,
    };
    await writeFile(join(staging, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    await syncTree(staging);
    await rename(staging, destination);
    await syncPath(dirname(destination));
    options.logger.info({ destination, ms: Math.round(performance.now() - started), database: manifest.database, uploads: manifest.uploads }, 'backup taken');
    return manifest;
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  } finally {
    if (links) await rm(links, { recursive: true, force: true });
  }
}

interface Held {
  takenAt: Date;
  heldMs: number;
  /** Files the second pass copied again. */
  recopied: number;
  lastMigration: string | null;
  /** `<org>/<doc>` of every ready document in the copy (empty without local uploads). */
  readyKeys: string[];
  linked: Set<string>;
}

/**
 * The database copied, consistent: a first copy while it runs (after a checkpoint, so the pages it
 * had in memory are in their files), then, holding its one connection, a checkpoint and a second
 * pass that copies only the files changed since (catchUp), lists its ready documents and links the
 * uploads. The hold lasts as long as the second pass, not the whole copy.
 */
async function holdAndCopy(sql: Sql, pgData: string, copyTo: string, files: { uploads: string; links: string } | undefined): Promise<Held> {
  const { latestApplied } = await migrationStatus(sql);
  await withDeadline(CHECKPOINT_DEADLINE_MS, async () => {
    await sql`checkpoint`;
  });
  const since = Date.now();
  const before = await statWhileChanging(pgData);
  await copyTree(pgData, copyTo, { changing: true });
  const copied = await statTree(copyTo);
  const reserved = await sql.reserve();
  const held = performance.now();
  try {
    await reserved`checkpoint`;
    const takenAt = new Date();
    const recopied = await catchUp(pgData, copyTo, before, copied, since);
    // Read-only, to check the pair: the documents store owns this table's writes.
    const readyKeys = files ? (await reserved<{ key: string }[]>`select organization_id || '/' || id as key from documents where status = 'ready'`).map((row) => row.key) : [];
    const linked = files ? await linkUploads(files.uploads, files.links) : new Set<string>();
    return { takenAt, heldMs: Math.round(performance.now() - held), recopied, lastMigration: latestApplied, readyKeys, linked };
  } finally {
    reserved.release();
  }
}

/** statTree on a directory that changes meanwhile: a directory may vanish under the walk; then it starts again. */
async function statWhileChanging(dir: string): ReturnType<typeof statTree> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statTree(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 3) throw error;
    }
  }
}

/** The first checkpoint runs as a statement among the others, with a deadline fit for writing out a large buffer pool. */
const CHECKPOINT_DEADLINE_MS = 120_000;

async function refuseExisting(destination: string): Promise<void> {
  const found = await lstat(destination).catch(() => undefined);
  if (!found) return;
  if (!found.isDirectory() || (await readdir(destination)).length > 0) {
    throw new Error(`${destination} already exists and is not an empty directory: give the backup a new path.`);
  }
}

/** Copies DATA_DIR/secret when there is one (SECRET unset): signed links and cursors need it. */
async function copySecret(dataDir: string, staging: string): Promise<boolean> {
  try {
    await copyFile(join(dataDir, 'secret'), join(staging, 'secret'));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

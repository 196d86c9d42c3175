/**
 * Copying and measuring the trees a backup holds. `cp -R` copies PGlite's data directory (about
 * 1 200 files) in tens of milliseconds where node's fs.cp walks it in JavaScript several times
 * slower (test/support/data-dir.ts measured both); the backup holds the database's one connection
 * while it copies, so the faster one is used wherever there is a `cp`.
 */
import { execFile } from 'node:child_process';
import { copyFile, cp, link, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { syncPath as syncFileOrDirectory } from '../storage/sync-path.ts';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';

/**
 * Copies the directory `from` into `to` (created when missing), everything in it. `changing`:
 * `from` changes meanwhile, and a file that vanishes halfway is no failure (catchUp fixes the copy).
 */
export async function copyTree(from: string, to: string, options: { changing?: boolean } = {}): Promise<void> {
  await mkdir(to, { recursive: true, mode: 0o700 });
  try {
    try {
      await promisify(execFile)('cp', ['-R', `${from}/.`, to]);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await cp(from, to, { recursive: true });
    }
  } catch (error) {
    if (!options.changing) throw error;
  }
}

/** What a file looked like: a write changes its mtime and ctime, a rename onto its name its inode. */
interface FileState {
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
}

/** Every file under `dir` (by path relative to it) with its state, and every directory. */
export interface TreeState {
  files: Map<string, FileState>;
  dirs: string[];
}

export async function statTree(dir: string): Promise<TreeState> {
  const files = new Map<string, FileState>();
  const dirs: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isDirectory()) dirs.push(relative(dir, path));
    if (!entry.isFile()) continue;
    try {
      const { size, mtimeNs, ctimeNs, ino } = await stat(path, { bigint: true });
      files.set(relative(dir, path), { size, mtimeNs, ctimeNs, ino });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error; // gone meanwhile
    }
  }
  return { files, dirs };
}

/**
 * How recent a change must be for a file to be copied again whatever its state says: file
 * systems stamp times from a clock that may lag the one Date.now() reads by a tick (a few ms).
 */
const CLOCK_MARGIN_MS = 2000n;

/**
 * Brings the copy `to` (whose state is `copied`), made from `from` after `before` was taken (and
 * `before` itself after `since`, Date.now()), up to date with `from` as it is now, copying only what may have changed:
 * a file whose state differs from `before`, or that changed since shortly before `since` (a change
 * within the clock's tick leaves the times as they were), or is missing or of another size in the
 * copy; and deleting what is no longer in `from`. The copy may have been made while `from` changed
 * (even failed halfway): whatever it got wrong has changed since `before`. Answers the files copied.
 */
export async function catchUp(from: string, to: string, before: TreeState, copied: TreeState, since: number): Promise<number> {
  const now = await statTree(from);
  const recent = (BigInt(since) - CLOCK_MARGIN_MS) * 1_000_000n;
  for (const dir of now.dirs) await mkdir(join(to, dir), { recursive: true });
  const stale = [...now.files].filter(([path, state]) => {
    const was = before.files.get(path);
    const unchanged = was && was.size === state.size && was.mtimeNs === state.mtimeNs && was.ctimeNs === state.ctimeNs && was.ino === state.ino;
    return !unchanged || state.ctimeNs >= recent || state.mtimeNs >= recent || copied.files.get(path)?.size !== state.size;
  });
  await Promise.all(stale.map(([path]) => mkdir(dirname(join(to, path)), { recursive: true }).then(() => copyFile(join(from, path), join(to, path)))));
  await Promise.all([...copied.files.keys()].filter((path) => !now.files.has(path)).map((path) => rm(join(to, path), { force: true })));
  return stale.length;
}

/**
 * fsync(2) of every file and directory under `dir`, and of `dir`: `cp` and copyFile leave what they
 * wrote in the page cache, and a backup (or a restore) that says it is done must survive a power
 * cut right after. A few at a time.
 */
export async function syncTree(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  const paths = [...entries.filter((entry) => entry.isFile() || entry.isDirectory()).map((entry) => join(entry.parentPath, entry.name)), dir];
  const worker = async () => {
    for (let path = paths.shift(); path !== undefined; path = paths.shift()) await syncPath(path);
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

/** fsync(2) of one file or directory (on a file system that cannot sync a directory, only files). */
export async function syncPath(path: string): Promise<void> {
  try {
    await syncFileOrDirectory(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM') throw error;
  }
}

/** The number of files under `dir` and their bytes. */
export async function measureTree(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    files += 1;
    bytes += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return { files, bytes };
}

/**
 * Hard-links every stored object under `uploads` (`<org>/<doc>`, and the uploads waiting for
 * documents.complete, `<org>/.<doc>.upload`) into `into`, keeping the layout; a PUT still being
 * written (`.part`) is left out. A link costs no copy, so this runs while the database is held.
 * The local driver never writes a stored file in place (an upload is written beside it and renamed
 * over it: local-driver.ts, upload-routes.ts), so a link keeps the bytes as they were when linked.
 * Where a link is impossible (another file system) the file is copied instead. Answers the keys
 * (`<org>/<doc>`) of the stored objects linked.
 */
export async function linkUploads(uploads: string, into: string): Promise<Set<string>> {
  const keys = new Set<string>();
  const organizations = await readdir(uploads, { withFileTypes: true }).catch(() => []);
  for (const organization of organizations) {
    if (!organization.isDirectory()) continue;
    const from = join(uploads, organization.name);
    const to = join(into, organization.name);
    await mkdir(to, { recursive: true });
    const files = await readdir(from, { withFileTypes: true }).catch(() => []);
    await Promise.all(
      files
        .filter((file) => file.isFile() && !file.name.endsWith('.part'))
        .map(async (file) => {
          const linked = await linkOrCopy(join(from, file.name), join(to, file.name));
          if (linked && !file.name.startsWith('.')) keys.add(`${organization.name}/${file.name}`);
        }),
    );
  }
  return keys;
}

/** False when the file is gone meanwhile (a deletion racing the backup). */
async function linkOrCopy(from: string, to: string): Promise<boolean> {
  try {
    await link(from, to);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP') throw error;
  }
  try {
    await copyFile(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/**
 * A throwaway copy of the working tree (node_modules linked, no .git) for tests that change the
 * project as a developer would (`make scaffold`, adding a job kind) and run its own tools on the
 * result: codegen, tsc, Redocly, vitest, contract-diff. Children run with node's own folder first
 * on PATH (redocly's and vitest's children run `node`). The migrated templates a copy builds are
 * kept for the next run's copy of the same test (`kept` below).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, cp, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * What a copy leaves for the next run's copies of the same test: the migrated templates it built.
 * A test makes the same edits every run, so a new migration's template was otherwise built again
 * (initdb and every migration) for a tree that differs from last time's by what developers
 * changed since.
 */
const kept = join(root, 'node_modules/.cache/workspace-api/throwaway');

export interface Run {
  code: number;
  out: string;
}

export interface ThrowawayCopy {
  dir: string;
  /** `node <args>` in the copy. */
  run(args: string[], env?: NodeJS.ProcessEnv): Promise<Run>;
  /** vitest on these files of the copy. */
  vitest(files: string[]): Promise<Run>;
  /**
   * The type check of `make lint` (TypeScript 7's native tsc) on the whole copy, incremental
   * within the copy: a second call re-checks what changed since the first.
   */
  tsc(): Promise<Run>;
  /** Every file of the copy (node_modules aside) with a hash of its content. */
  snapshot(): Promise<Map<string, string>>;
  remove(): Promise<void>;
}

export async function throwawayCopy(prefix: string): Promise<ThrowawayCopy> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const skip = new Set(['node_modules', '.git', '.data', '.tmp'].map((name) => join(root, name)));
  await cp(root, dir, { recursive: true, filter: (source) => !skip.has(source.replace(/\/$/, '')) });
  await linkNodeModules(dir, prefix);
  const cache = join(dir, 'node_modules/.cache');

  const run = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> =>
    new Promise((resolve) => {
      // process.env holds the suite's NODE_COMPILE_CACHE (vitest.config.ts): V8's code cache for the
      // tools' modules too (tsc's 9 MB among them), kept with the service's (src/main.ts).
      const full: NodeJS.ProcessEnv = {
        ...process.env,
        NO_COLOR: '1',
        ...env,
        PATH: `${dirname(process.execPath)}:${join(dir, 'node_modules/.bin')}:${process.env.PATH ?? ''}`,
      };
      for (const key of Object.keys(full)) if (full[key] === undefined) delete full[key];
      execFile(process.execPath, args, { cwd: dir, env: full, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, out: `${stdout}${stderr}` });
      });
    });
  return {
    dir,
    run,
    // VITEST* variables of this run would make the child think it is a worker of ours.
    // --liftoff-only as vitest.config.ts gives the workers: the main process opens the template (global-setup.ts),
    // and V8 optimizing PGlite's wasm for it cost 0.5 s of CPU per run.
    // One worker: each worker loads the app's modules and opens its own embedded database, which
    // cost more than the few small files a copy runs (scaffold's four: 11.5 → 6.7 s of CPU, and
    // 6-7 → 5.2 s of wall). They run file after file in it, as in any worker of the suite.
    vitest: (files) =>
      run(
        ['--liftoff-only', 'node_modules/vitest/vitest.mjs', 'run', '--maxWorkers=1', ...files],
        Object.fromEntries(
          Object.keys(process.env)
            .filter((key) => key.startsWith('VITEST'))
            .map((key) => [key, undefined]),
        ),
      ),
    // The cold check of the whole copy is 3.4 s of CPU on one thread (it was 17 s with TypeScript
    // 5's tsc: docs/benchmarks.md). Its default four checker threads took 5.4 s of CPU for the
    // same wall time on two cores, and here it runs beside the copy's vitest and Redocly.
    tsc: () => run(['node_modules/typescript-native/bin/tsc', '--noEmit', '-p', '.', '--incremental', '--tsBuildInfoFile', 'node_modules/.cache/tsc.tsbuildinfo', '--singleThreaded']),
    async snapshot() {
      const files = new Map<string, string>();
      for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
        const path = relative(dir, join(entry.parentPath, entry.name));
        if (!entry.isFile() || path.startsWith('node_modules')) continue;
        files.set(
          path,
          createHash('sha256')
            .update(await readFile(join(dir, path)))
            .digest('hex'),
        );
      }
      return files;
    },
    async remove() {
      await keepTemplates(join(cache, 'workspace-api'), prefix);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * node_modules: each package linked to the working tree's, but a cache folder of the copy's own.
 * The migrated template lives in node_modules/.cache/workspace-api and a build removes the
 * templates of other migrations (database-template.ts): a copy with a new migration, sharing the
 * folder, deleted the template the suite around it was starting databases from. The current
 * template and the model files are linked into the copy's folder, and the template this test's
 * copy built last run (keepTemplates); a new build replaces the links.
 */
async function linkNodeModules(dir: string, prefix: string): Promise<void> {
  const modules = join(root, 'node_modules');
  await mkdir(join(dir, 'node_modules/.cache/workspace-api'), { recursive: true });
  for (const name of await readdir(modules)) {
    if (name !== '.cache') await symlink(join(modules, name), join(dir, 'node_modules', name));
  }
  const cache = join(modules, '.cache/workspace-api');
  for (const name of await readdir(cache)) {
    if (name === 'models' || /^pg-template-.*\.tar$/.test(name)) await symlink(join(cache, name), join(dir, 'node_modules/.cache/workspace-api', name));
  }
  for (const name of await readdir(kept).catch(() => [])) {
    if (name.startsWith(`${prefix}pg-template-`) && name.endsWith('.tar')) await symlink(join(kept, name), join(dir, 'node_modules/.cache/workspace-api', name.slice(prefix.length)));
  }
}

/** Copies a file atomically (two copies of one test may finish together; a reader never sees half a file). */
async function keep(from: string, to: string): Promise<void> {
  await mkdir(dirname(to), { recursive: true });
  const partial = `${to}.${process.pid}-${Math.random().toString(36).slice(2)}.partial`;
  try {
    await copyFile(from, partial);
    await rename(partial, to);
  } catch (error) {
    await rm(partial, { force: true });
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/**
 * The templates the copy built (files, not the links to the working tree's), for the next run's
 * copy of the same test; each is 40 MB, so only the newest of a test is kept.
 */
async function keepTemplates(cache: string, prefix: string): Promise<void> {
  for (const name of await readdir(cache).catch(() => [])) {
    if (!/^pg-template-.*\.tar$/.test(name) || (await lstat(join(cache, name))).isSymbolicLink()) continue;
    await keep(join(cache, name), join(kept, `${prefix}${name}`));
    for (const old of await readdir(kept)) {
      if (old.startsWith(`${prefix}pg-template-`) && old !== `${prefix}${name}` && !old.endsWith('.partial')) await rm(join(kept, old), { force: true });
    }
  }
}

/** The paths whose content differs between two snapshots, or that only one has. */
export function changedPaths(before: Map<string, string>, after: Map<string, string>): string[] {
  const paths = new Set([...before.keys(), ...after.keys()]);
  return [...paths].filter((path) => before.get(path) !== after.get(path)).sort();
}

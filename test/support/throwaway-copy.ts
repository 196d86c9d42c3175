/**
 * A throwaway copy of the working tree (node_modules linked, no .git) for tests that change the
 * project as a developer would (`make scaffold`, adding a job kind) and run its own tools on the
 * result: codegen, tsc, Redocly, vitest, contract-diff. Children run with node's own folder first
 * on PATH (redocly's and vitest's children run `node`).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));

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
  tsc(): Promise<Run>;
  /** Every file of the copy (node_modules aside) with a hash of its content. */
  snapshot(): Promise<Map<string, string>>;
  remove(): Promise<void>;
}

export async function throwawayCopy(prefix: string): Promise<ThrowawayCopy> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const skip = new Set(['node_modules', '.git', '.data', '.tmp'].map((name) => join(root, name)));
  await cp(root, dir, { recursive: true, filter: (source) => !skip.has(source.replace(/\/$/, '')) });
  await linkNodeModules(dir);

  const run = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> =>
    new Promise((resolve) => {
      // NODE_COMPILE_CACHE: V8's code cache for the tools' modules (tsc's 9 MB among them), kept with the service's (src/main.ts).
      const full: NodeJS.ProcessEnv = {
        ...process.env,
        NO_COLOR: '1',
        NODE_COMPILE_CACHE: join(root, 'node_modules/.cache/workspace-api/compile/'),
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
    vitest: (files) =>
      run(
        ['node_modules/vitest/vitest.mjs', 'run', ...files],
        Object.fromEntries(
          Object.keys(process.env)
            .filter((key) => key.startsWith('VITEST'))
            .map((key) => [key, undefined]),
        ),
      ),
    // Incremental, its state in the copy's own cache folder: a second run re-checks only what changed since the first.
    tsc: () => run(['node_modules/typescript/bin/tsc', '--noEmit', '-p', '.', '--incremental', '--tsBuildInfoFile', 'node_modules/.cache/tsc.tsbuildinfo']),
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
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * node_modules: each package linked to the working tree's, but a cache folder of the copy's own.
 * The migrated template lives in node_modules/.cache/workspace-api and a build removes the
 * templates of other migrations (database-template.ts): a copy with a new migration, sharing the
 * folder, deleted the template the suite around it was starting databases from. The current
 * template and the model files are linked into the copy's folder; a new build replaces the links.
 */
async function linkNodeModules(dir: string): Promise<void> {
  const modules = join(root, 'node_modules');
  await mkdir(join(dir, 'node_modules/.cache/workspace-api'), { recursive: true });
  for (const name of await readdir(modules)) {
    if (name !== '.cache') await symlink(join(modules, name), join(dir, 'node_modules', name));
  }
  const cache = join(modules, '.cache/workspace-api');
  for (const name of await readdir(cache)) {
    if (name === 'models' || /^pg-template-.*\.tar$/.test(name)) await symlink(join(cache, name), join(dir, 'node_modules/.cache/workspace-api', name));
  }
}

/** The paths whose content differs between two snapshots, or that only one has. */
export function changedPaths(before: Map<string, string>, after: Map<string, string>): string[] {
  const paths = new Set([...before.keys(), ...after.keys()]);
  return [...paths].filter((path) => before.get(path) !== after.get(path)).sort();
}

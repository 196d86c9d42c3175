/**
 * Packs clients/typescript as a partner's tarball: `npm pack` there (its prepack builds dist/),
 * with the machine's npm and node, offline. Suites that pack run in parallel processes and the
 * build replaces dist/, so a pack holds a lock (a directory next to the package's, created
 * atomically) for its whole build-and-pack.
 */
import { execFile } from 'node:child_process';
import { mkdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLIENT_PACKAGE = join(ROOT, 'clients', 'typescript');

/**
 * The environment of a partner's machine: PATH without any node_modules/.bin (the repository's
 * puts the `node` dev dependency first), so `npm` and `node` are the machine's; npm offline.
 */
export const machineEnv: NodeJS.ProcessEnv = {
  ...process.env,
  PATH: (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => !dir.split(sep).includes('node_modules'))
    .join(delimiter),
  npm_config_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
};

/** A lock older than this is left over from a killed run. */
const STALE_MS = 10 * 60_000;
const LOCK = join(tmpdir(), `workspace-api-client-pack-${Buffer.from(CLIENT_PACKAGE).toString('base64url')}.lock`);

async function lock(): Promise<void> {
  for (;;) {
    try {
      await mkdir(LOCK);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const since = await stat(LOCK).then(
        (info) => Date.now() - info.mtimeMs,
        () => 0,
      );
      if (since > STALE_MS) await rm(LOCK, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Builds and packs the package into `destination`; answers the tarball's path. */
export async function packClient(destination: string): Promise<string> {
  await lock();
  try {
    const { stdout } = await run('npm', ['pack', '--pack-destination', destination], { cwd: CLIENT_PACKAGE, env: machineEnv, maxBuffer: 16 * 1024 * 1024 });
    // npm prints the tarball's file name last (after anything the prepack build printed).
    return join(destination, stdout.trim().split('\n').at(-1)!);
  } finally {
    await rm(LOCK, { recursive: true, force: true });
  }
}

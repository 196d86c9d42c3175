/**
 * The TypeScript compilers a partner may type-check generated code with: 5.x, whose JavaScript
 * API the generators need (openapi-typescript, @hey-api/openapi-ts), and 7.x, the native compiler
 * that the registry now calls latest and that `make lint` runs. Each is `node <path> ...options`,
 * from the repository's root (`node_modules/.bin/tsc` is either one, whichever npm linked last).
 * Given files on the command line, 7.x refuses to run beside a tsconfig.json unless told to
 * ignore it (TS5112); 5.x ignores it silently and does not know the option.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const COMPILERS = [
  ['TypeScript 5', ['node_modules/typescript/bin/tsc']],
  ['TypeScript 7', ['node_modules/typescript-native/bin/tsc', '--ignoreConfig']],
] as const;

type Compiler = (typeof COMPILERS)[number][1];

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * `files` type-checked strictly, as a partner's bundler-resolved ESM project with the DOM's
 * fetch, plus `options`; rejects with the compiler's stdout when it reports an error.
 */
export function strictTypeCheck(compiler: Compiler, files: string[], options: string[] = []) {
  const strict = ['--noEmit', '--strict', '--skipLibCheck', '--target', 'es2022', '--module', 'esnext', '--moduleResolution', 'bundler', '--lib', 'es2022,dom'];
  return promisify(execFile)(process.execPath, [...compiler, ...strict, ...options, ...files], { cwd: root });
}

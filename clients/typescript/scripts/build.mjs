// Builds dist/ for `npm pack` (the `prepack` script), with the repository's own tools (its
// node_modules/.bin): the library with tsc (ESM JavaScript and .d.ts, tsconfig.json), and, when
// src/cli/main.ts exists, the command-line tool bundled by esbuild into one file (commander,
// cli-progress and ora inlined), so the package has no runtime dependency. Plain JavaScript, so it
// runs on whatever Node npm runs on; needs no network.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const here = fileURLToPath(new URL('..', import.meta.url));
/** @param {string} name */
const bin = (name) => {
  const path = join(here, '..', '..', 'node_modules', '.bin', name);
  if (!existsSync(path)) throw new Error(`${path} is missing: run npm install at the repository's root first`);
  return path;
};
/** @param {string} tool @param {string[]} args */
const run = (tool, args) => execFileSync(bin(tool), args, { cwd: here, stdio: 'inherit' });

rmSync(join(here, 'dist'), { recursive: true, force: true });
run('tsc', ['-p', 'tsconfig.json']);
// tsc rewrites the sources' relative `./x.ts` imports to `./x.js` in the JavaScript but not in the
// declarations; `.js` there lets every TypeScript that reads ESM packages resolve them (to `x.d.ts`).
const dist = join(here, 'dist');
for (const name of readdirSync(dist).filter((file) => file.endsWith('.d.ts'))) {
  const path = join(dist, name);
  writeFileSync(path, readFileSync(path, 'utf8').replace(/(from\s+['"]\.{1,2}\/[^'"]+)\.ts(['"])/g, '$1.js$2'));
}

const cli = join(here, 'src', 'cli', 'main.ts');
if (existsSync(cli)) {
  const outfile = join(here, 'dist', 'cli.js');
  // An ESM bundle has no `require`; the CommonJS dependencies inlined (commander's, cli-progress')
  // call it for Node's built-in modules, so the bundle defines one.
  const require = "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);";
  // The entry's own `#!` line, if any, is kept by esbuild; otherwise the banner adds one.
  const shebang = readFileSync(cli, 'utf8').startsWith('#!') ? '' : '#!/usr/bin/env node\n';
  run('esbuild', [cli, '--bundle', '--platform=node', '--format=esm', '--target=node20', `--outfile=${outfile}`, '--log-level=warning', `--banner:js=${shebang}${require}`]);
  chmodSync(outfile, 0o755);
}

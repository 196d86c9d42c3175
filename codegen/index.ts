/**
 * `make codegen`: bundle the contract, then write types, validators, the procedure table and the
 * typed client into generated/. With --check, writes nothing and fails when generated/ is stale.
 */
import { readFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { bundleContract } from './bundle.ts';
import { readOperations } from './operations.ts';
import { buildTypes } from './types.ts';
import { buildValidators } from './validators.ts';
import { buildProcedures } from './procedures.ts';
import { buildClient } from './client.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const check = process.argv.includes('--check');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

const doc = bundleContract(root, version);
const operations = readOperations(doc);
const validators = buildValidators(doc, operations);

const files: Record<string, string> = {
  'openapi.json': `${JSON.stringify(doc, null, 2)}\n`,
  'types.ts': await buildTypes(doc),
  'validators-input.cjs': validators.input,
  'validators-output.cjs': validators.output,
  'procedures.ts': buildProcedures(operations),
  'client.ts': buildClient(doc, operations),
};

const dir = join(root, 'generated');
mkdirSync(dir, { recursive: true });
const stale = Object.entries(files).filter(([name, text]) => {
  const path = join(dir, name);
  return !existsSync(path) || readFileSync(path, 'utf8') !== text;
});

if (check) {
  if (stale.length > 0) {
    console.error(`generated/ is stale (${stale.map(([name]) => name).join(', ')}): run \`make codegen\` and commit the result.`);
    process.exit(1);
  }
  console.log(`generated/ is fresh (${operations.length} procedures).`);
} else {
  for (const [name, text] of stale) writeFileSync(join(dir, name), text);
  console.log(`codegen: ${operations.length} procedures; wrote ${stale.length} of ${Object.keys(files).length} files.`);
}

/**
 * `make codegen`: bundle each contract, then write its types, validators, route table and named
 * enums (enums.ts) into generated/, with the settings schema's validator (config-validator.ts),
 * plus the typed RPC client package for the procedures (clients/typescript/, see
 * codegen/client.ts), docs/operations.md, docs/configuration.md and the README's list of
 * procedures (between its markers). With --check, writes nothing and fails when
 * any generated file is stale.
 *
 * Two documents: openapi/openapi.yaml (the procedures, served at /api/v1/openapi.json) and
 * openapi/auth.yaml (the identity routes, served at /api/auth/openapi.json).
 */
import { readFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { bundleContracts, publishedDocument } from './bundle.ts';
import { readOperations } from './operations.ts';
import { buildTypes } from './types.ts';
import { buildValidators } from './validators.ts';
import { buildAuthRoutes, buildProcedures } from './procedures.ts';
import { buildClientPackage } from './client.ts';
import { buildConfigurationDoc } from './configuration-doc.ts';
import { buildConfigValidator } from './config-validator.ts';
import { buildOperationsDoc } from './operations-doc.ts';
import { buildEnums } from './enums.ts';
import { withProcedureList } from './readme-procedures.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const check = process.argv.includes('--check');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

const files: Record<string, string> = {};
let count = 0;
const lists: Record<'procedures' | 'identity', ReturnType<typeof readOperations>> = { procedures: [], identity: [] };
const bundles = bundleContracts(root, version, ['v1', 'auth']);

{
  const bundle = bundles.v1!;
  const doc = publishedDocument(bundle);
  const operations = readOperations(doc);
  lists.procedures = operations;
  // From the whole bundle: the x-internal schemas (the HTTP layer's own answers) get validators too.
  const validators = buildValidators(bundle, operations);
  count += operations.length;
  const types = await buildTypes(doc);
  Object.assign(files, {
    'openapi.json': `${JSON.stringify(doc, null, 2)}\n`,
    'types.ts': types,
    'validators-input.cjs': validators.input,
    'validators-output.cjs': validators.output,
    'procedures.ts': buildProcedures(operations),
    'enums.ts': buildEnums(doc, 'openapi/'),
  });
  // The client package, outside generated/ (its paths are from the root, these are from generated/).
  for (const [path, text] of Object.entries(buildClientPackage(root, doc, operations, types))) files[`../${path}`] = text;
}
{
  const bundle = bundles.auth!;
  const doc = publishedDocument(bundle);
  const operations = readOperations(doc);
  lists.identity = operations;
  const validators = buildValidators(bundle, operations);
  count += operations.length;
  Object.assign(files, {
    'auth-openapi.json': `${JSON.stringify(doc, null, 2)}\n`,
    'auth-types.ts': await buildTypes(doc),
    'auth-validators-input.cjs': validators.input,
    'auth-validators-output.cjs': validators.output,
    'auth-routes.ts': buildAuthRoutes(operations),
  });
}

files['config-validator.cjs'] = buildConfigValidator(); // the settings schema, precompiled for src/config/read.ts
files['../docs/configuration.md'] = buildConfigurationDoc(); // the settings table, from src/config/schema.ts
files['../docs/operations.md'] = buildOperationsDoc(lists.procedures, lists.identity); // every operation, from the same records as the route tables
files['../README.md'] = withProcedureList(readFileSync(join(root, 'README.md'), 'utf8'), lists.procedures); // its list of procedures, between markers
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
  console.log(`generated/ is fresh (${count} operations).`);
} else {
  for (const [name, text] of stale) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  console.log(`codegen: ${count} operations; wrote ${stale.length} of ${Object.keys(files).length} files.`);
}

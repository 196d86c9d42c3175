/**
 * `make scaffold OP=workspaces.archive METHOD=POST PATH=/workspaces/{id}/archive ACCESS='{ permission: workspace:update, tenant: row, resource: workspace }'`:
 * the boilerplate of a new operation of an existing group, in the house style, so a person writes
 * only the handler (docs/adding-an-operation.md). It writes
 * - the operation into openapi/paths/<group>.yaml (beside the path item when the path exists,
 *   else a new path item and its line under `paths:` in openapi/openapi.yaml), with every header,
 *   status and example the contract tests require, its own 400 example (the one the server really
 *   answers for the recorded bad input) and a new answer schema openapi/components/schemas/<Name>Result.yaml;
 * - the recorded bad input into test/unit/operation-examples.test.ts;
 * - a handler stub into the group's handler object, which throws: the server answers 500 until
 *   the handler is written;
 * - test/<group>/<name>.test.ts, which fails until then;
 * and runs codegen. It refuses, before writing anything, when the operation, the method on the path
 * or any file it would create already exists. Only `node` runs here: make exports a PATH= given on
 * its command line to the recipe, so nothing may be looked up on PATH.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { format, resolveConfig } from 'prettier';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

const root = fileURLToPath(new URL('..', import.meta.url));
const at = (path: string) => join(root, path);
const read = (path: string) => readFileSync(at(path), 'utf8');

type Access = string | { permission?: string; tenant?: string; resource?: string; idField?: string; role?: string; optional?: boolean };
interface Field {
  name: string;
  in: 'path' | 'query' | 'body';
  example: string;
  pattern: string;
  yaml: string;
}

function fail(message: string): never {
  console.error(`make scaffold: ${message}`);
  process.exit(2);
}

function argument(name: string): string {
  const given = process.argv
    .slice(2)
    .find((arg) => arg.startsWith(`${name}=`))
    ?.slice(name.length + 1)
    .trim();
  if (!given) fail(`${name}= is required. Usage: make scaffold OP=workspaces.archive METHOD=POST PATH=/workspaces/{id}/archive ACCESS='{ permission: workspace:update, tenant: row, resource: workspace }'`);
  return given;
}

const pascal = (words: string[]) => words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
const kebab = (word: string) => word.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);

// ---- The arguments, checked before anything is written.
const op = argument('OP');
if (!/^[a-z][a-zA-Z0-9]*(\.[a-z][a-zA-Z0-9]*)+$/.test(op)) fail(`OP=${op}: a procedure name is <group>.<name> in camelCase, e.g. workspaces.archive`);
const [group, ...rest] = op.split('.') as [string, ...string[]];
const method = argument('METHOD').toUpperCase();
if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) fail(`METHOD=${method}: one of GET, POST, PUT, PATCH, DELETE`);
const path = argument('PATH');
if (path.startsWith('/api/')) fail(`PATH=${path}: give the path without the /api/v1 prefix (servers: adds it), e.g. /workspaces/{id}/archive`);
if (!/^(\/([a-z0-9][a-z0-9-]*|\{[a-z][a-zA-Z0-9]*\}))+$/.test(path)) fail(`PATH=${path}: segments are kebab-case words or {camelCase} parameters, e.g. /workspaces/{id}/archive`);
const pathParams = [...path.matchAll(/\{([a-zA-Z0-9]+)\}/g)].map((match) => match[1]!);
if (new Set(pathParams).size !== pathParams.length) fail(`PATH=${path}: a parameter appears twice`);

let access: Access;
try {
  access = parse(argument('ACCESS')) as Access;
} catch (error) {
  fail(`ACCESS is not YAML: ${(error as Error).message}`);
}
checkAccess(access);

function checkAccess(value: Access): void {
  if (typeof value === 'string') {
    if (!['public', 'session', 'platform-admin'].includes(value))
      fail(`ACCESS=${value}: public, session, platform-admin or a mapping such as '{ permission: workspace:update, tenant: row, resource: workspace }'`);
    return;
  }
  if (value === null || typeof value !== 'object') fail('ACCESS: public, session, platform-admin or a mapping');
  const unknown = Object.keys(value).filter((key) => !['permission', 'tenant', 'resource', 'idField', 'role', 'optional'].includes(key));
  if (unknown.length > 0) fail(`ACCESS: unknown key ${unknown.join(', ')} (permission, tenant, resource, idField, role, optional)`);
  const idField = value.idField ?? 'id';
  if (value.role !== undefined) {
    if (value.role !== 'platform-admin' || !value.resource) fail('ACCESS: a role mapping is { role: platform-admin, resource, idField? }');
  } else if (!['organizationId', 'workspaceId', 'row'].includes(value.tenant ?? '')) fail('ACCESS: tenant is one of organizationId, workspaceId, row');
  if (value.tenant === 'workspaceId' && !pathParams.includes('workspaceId')) fail(`ACCESS: tenant workspaceId needs {workspaceId} in PATH=${path}`);
  if ((value.tenant === 'row' || value.role) && !value.resource) fail('ACCESS: tenant row needs a resource (workspace, document, job, ...)');
  if ((value.tenant === 'row' || value.role) && !pathParams.includes(idField)) fail(`ACCESS: the row's id field ${idField} must be a parameter of PATH=${path}`);
  if (value.permission !== undefined && !read('src/auth/permissions.ts').includes(`'${value.permission}'`)) fail(`ACCESS: permission ${value.permission} is not in src/auth/permissions.ts`);
}

// ---- Where each piece goes, and the refusals.
const groupFile = `openapi/paths/${group}.yaml`;
if (!existsSync(at(groupFile))) fail(`${group} is a new group: create ${groupFile}, its tag and its handler object first (docs/adding-an-operation.md, "A new group")`);
for (const file of readdirSync(at('openapi/paths'))) {
  if (new RegExp(`operationId: ${op.replace(/\./g, '\\.')}\\s*$`, 'm').test(read(`openapi/paths/${file}`))) fail(`${op} already exists (openapi/paths/${file})`);
}
const rootDocument = read('openapi/openapi.yaml');
const existingRef = (parse(rootDocument).paths?.[path] as { $ref?: string } | undefined)?.$ref;
const [itemFile, itemKey] = existingRef ? [`openapi/${existingRef.split('#/')[0]}`, existingRef.split('#/')[1]!] : [groupFile, `${group.replace(/s$/, '')}-${rest.map(kebab).join('-')}`];
const itemText = read(itemFile);
const item = parse(itemText)?.[itemKey] as Record<string, unknown> | undefined;
if (existingRef && item?.[method.toLowerCase()]) fail(`${method} ${path} already exists (${itemFile}#/${itemKey})`);
if (!existingRef && item) fail(`${itemFile} already has a path item ${itemKey}`);

const name = pascal([group, ...rest]);
const resultSchema = `${name}Result`;
const inputSchema = `${name}Input`;
const testFile = `test/${group}/${rest.map(kebab).join('-')}.test.ts`;
for (const file of [`openapi/components/schemas/${resultSchema}.yaml`, `openapi/components/schemas/${inputSchema}.yaml`, testFile]) {
  if (existsSync(at(file))) fail(`${file} exists already; it is never overwritten`);
}
const handlerFile = findHandlerFile();

/** The handler object whose operations share the longest prefix with the new one (admin.flags.* go beside admin.flags.list). */
function findHandlerFile(): string {
  let best: { file: string; shared: number } | undefined;
  const walk = (dir: string): string[] =>
    readdirSync(at(dir), { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(`${dir}/${entry.name}`) : entry.name.endsWith('.ts') ? [`${dir}/${entry.name}`] : []));
  for (const file of walk('src')) {
    const text = read(file);
    if (!text.includes('} satisfies Handlers;')) continue;
    for (const [, key] of text.matchAll(/^ {2}(?:async )?'([a-z][\w.]*)'/gm)) {
      const parts = key!.split('.');
      let shared = 0;
      while (shared < parts.length - 1 && parts[shared] === [group, ...rest][shared]) shared += 1;
      if (shared > 0 && (!best || shared > best.shared)) best = { file, shared };
    }
  }
  if (!best) fail(`no handler object holds a ${group}.* operation: for a new group, create src/${group}/procedures.ts first (docs/adding-an-operation.md)`);
  return best.file;
}

// ---- The input fields: the path parameters, plus organizationId where the access needs it.
function idSchema(kind: string): { ref: string; pattern: string; example: string } | undefined {
  const file = `openapi/components/schemas/${pascal([kind])}Id.yaml`;
  if (!existsSync(at(file))) return undefined;
  const schema = parse(read(file)) as { pattern: string; examples: string[] };
  return { ref: `${pascal([kind])}Id.yaml`, pattern: schema.pattern, example: schema.examples[0]! };
}

const resource = typeof access === 'object' ? access.resource : undefined;

/** The same path parameter of an operation on the same resource (a flag's `key`), as declared there. */
function knownParameter(param: string): Field | undefined {
  for (const file of readdirSync(at('openapi/paths'))) {
    for (const item of Object.values<Record<string, any>>(parse(read(`openapi/paths/${file}`)) ?? {})) {
      for (const operation of Object.values<any>(item)) {
        if (resource && operation?.['x-access']?.resource !== resource) continue;
        const declared = (operation?.parameters ?? []).find((p: any) => p.name === param && p.in === 'path');
        if (!declared) continue;
        const schema = declared.schema?.$ref ? parse(read(`openapi/components/schemas/${declared.schema.$ref.split('/').at(-1)}`)) : declared.schema;
        const example = declared.example ?? schema?.examples?.[0];
        if (typeof schema?.pattern !== 'string' || typeof example !== 'string') continue;
        const yaml = stringify([declared], { lineWidth: 0 }).replace(/^/gm, '      ').replace(/ +$/, '');
        return { name: param, in: 'path', example, pattern: schema.pattern, yaml };
      }
    }
  }
  return undefined;
}
const fields: Field[] = pathParams.map((param) => {
  const kind = param === 'id' ? (resource ?? group.replace(/s$/, '')) : param.endsWith('Id') ? param.slice(0, -2) : undefined;
  const id = kind ? idSchema(kind) : undefined;
  if (id) {
    return {
      name: param,
      in: 'path',
      example: id.example,
      pattern: id.pattern,
      yaml: `      - name: ${param}\n        in: path\n        required: true\n        description: The ${kind}'s id.\n        schema:\n          $ref: ../components/schemas/${id.ref}\n        example: ${id.example}\n`,
    };
  }
  const known = knownParameter(param);
  if (known) return known;
  // A parameter the contract does not know yet: a kebab-case key. Tighten it by hand.
  const pattern = '^[a-z0-9][a-z0-9-]*$';
  return {
    name: param,
    in: 'path',
    example: 'example',
    pattern,
    yaml: `      - name: ${param}\n        in: path\n        required: true\n        description: The ${param}.\n        schema:\n          type: string\n          minLength: 1\n          maxLength: 64\n          x-single-line: true\n          pattern: '${pattern}'\n          examples: [example]\n        example: example\n`,
  };
});
const takesBody = ['POST', 'PUT', 'PATCH'].includes(method);
const organization = idSchema('organization')!;
const needsOrganization = typeof access === 'object' && access.tenant === 'organizationId' && !pathParams.includes('organizationId');
if (needsOrganization) {
  fields.push({
    name: 'organizationId',
    in: takesBody ? 'body' : 'query',
    example: organization.example,
    pattern: organization.pattern,
    yaml: takesBody ? '' : '      - $ref: ../components/parameters/OrganizationIdQuery.yaml\n',
  });
}

// ---- The operation, in the layout of openapi/paths/workspaces.yaml.
const H = '../components/headers';
const R = '../components/responses';
const headers = (indent: string) =>
  `${indent}headers:\n${indent}  X-Request-Id:\n${indent}    $ref: ${H}/RequestId.yaml\n${indent}  traceresponse:\n${indent}    $ref: ${H}/TraceResponse.yaml\n${indent}  set-auth-token:\n${indent}    $ref: ${H}/SetAuthToken.yaml\n${indent}  Set-Cookie:\n${indent}    $ref: ${H}/SetSessionCookie.yaml\n`;
const shared = (status: string, response: string) => `      '${status}':\n        $ref: ${R}/${response}.yaml\n`;

/** The bad input of the operation's 400 example: every field valid but the first, which breaks its pattern. */
const badInput: Record<string, unknown> = fields.length === 0 ? { verbose: true } : Object.fromEntries(fields.map((field, index) => [field.name, index === 0 ? 'Not Valid!' : field.example]));
const badRequest =
  fields.length === 0
    ? shared('400', 'BadRequest')
    : `      '400':\n        description: >-\n          The input failed validation, or the request body is not the JSON the operation takes\n          (BAD_REQUEST). The example: a malformed \`${fields[0]!.name}\`.\n${headers('        ')}` +
      `        content:\n          application/json:\n            schema:\n              $ref: ../components/schemas/BadRequestError.yaml\n            example:\n` +
      `              defined: true\n              code: BAD_REQUEST\n              status: 400\n              message: Input validation failed.\n              data:\n                issues:\n` +
      `                  - path: [${fields[0]!.name}]\n                    message: 'must match pattern "${fields[0]!.pattern}"'\n                    params:\n                      pattern: '${fields[0]!.pattern}'\n`;

const isPublic = access === 'public';
const hasRow = typeof access === 'object' && (access.tenant === 'row' || access.tenant === 'workspaceId' || access.role !== undefined);
const accessYaml =
  typeof access === 'string'
    ? `    x-access: ${access}\n${isPublic ? '    security: []\n' : ''}`
    : `    x-access:\n${Object.entries(access)
        .map(([key, value]) => `      ${key}: ${value}\n`)
        .join('')}`;
const words = rest.map(kebab).join(' ').replace(/-/g, ' ');
const operation =
  `  ${method.toLowerCase()}:\n    operationId: ${op}\n    tags: [${group}]\n    summary: ${words[0]!.toUpperCase()}${words.slice(1)} (scaffolded)\n` +
  `    description: |\n      Written by make scaffold: say what it does, who may call it, its side effects and limits,\n      and when each error is answered.\n${accessYaml}` +
  `    parameters:\n${fields.map((field) => field.yaml).join('')}      - $ref: ../components/parameters/RequestIdHeader.yaml\n` +
  (fields.some((field) => field.in === 'body')
    ? `    requestBody:\n      required: true\n      content:\n        application/json:\n          schema:\n            $ref: ../components/schemas/${inputSchema}.yaml\n`
    : '') +
  `    responses:\n      '200':\n        description: What ${op} answers.\n${headers('        ')}        content:\n          application/json:\n            schema:\n              $ref: ../components/schemas/${resultSchema}.yaml\n` +
  badRequest +
  (isPublic ? '' : shared('401', 'Unauthorized') + shared('403', 'Forbidden')) +
  (hasRow ? shared('404', 'NotFound') : '') +
  shared('405', 'MethodNotAllowed') +
  shared('413', 'RequestTooLarge') +
  shared('429', 'TooManyRequests') +
  shared('500', 'InternalError') +
  (isPublic ? '' : shared('503', 'ServiceUnavailable'));

const result =
  `type: object\ndescription: What ${op} answers. Written by make scaffold; replace it with the real answer.\nrequired: [done]\nadditionalProperties: false\nproperties:\n` +
  `  done:\n    type: boolean\n    const: true\n    description: Always true.\n    examples: [true]\nexamples:\n  - done: true\n`;
const input =
  `type: object\ndescription: The input of ${op}. Written by make scaffold; add the fields it takes.\nrequired: [organizationId]\nadditionalProperties: false\nproperties:\n` +
  `  organizationId:\n    $ref: OrganizationId.yaml\nexamples:\n  - organizationId: ${organization.example}\n`;

// ---- Writing: the contract, the recorded bad input, the handler stub, the test; then codegen.
if (existingRef) {
  const keyLine = new RegExp(`^${itemKey}:\\s*\\n`, 'm').exec(itemText);
  if (!keyLine) fail(`${itemFile}: cannot find the line "${itemKey}:"`);
  const after = keyLine.index + keyLine[0].length;
  writeFileSync(at(itemFile), itemText.slice(0, after) + operation + itemText.slice(after));
} else {
  writeFileSync(at(itemFile), `${itemText.replace(/\n*$/, '\n')}${itemKey}:\n${operation}`);
  const refs = [...rootDocument.matchAll(new RegExp(`^ {4}\\$ref: paths/${group}\\.yaml#/.*\\n`, 'gm'))];
  const last = refs.at(-1);
  if (!last) fail(`openapi/openapi.yaml names no path of ${groupFile}`);
  const after = last.index + last[0].length;
  writeFileSync(at('openapi/openapi.yaml'), `${rootDocument.slice(0, after)}  ${path}:\n    $ref: paths/${group}.yaml#/${itemKey}\n${rootDocument.slice(after)}`);
}
writeFileSync(at(`openapi/components/schemas/${resultSchema}.yaml`), result);
if (fields.some((field) => field.in === 'body')) writeFileSync(at(`openapi/components/schemas/${inputSchema}.yaml`), input);

const literal = (value: Record<string, unknown>) =>
  `{ ${Object.entries(value)
    .map(([key, v]) => `${key}: ${typeof v === 'string' ? `'${v}'` : String(v)}`)
    .join(', ')} }`;
const examples = read('test/unit/operation-examples.test.ts');
if (!examples.includes('  // auth.yaml\n')) fail('test/unit/operation-examples.test.ts: cannot find "// auth.yaml" in its badInputs table');
writeFileSync(at('test/unit/operation-examples.test.ts'), examples.replace('  // auth.yaml\n', `  '${op}': ${literal(badInput)},\n  // auth.yaml\n`));

const handlers = read(handlerFile);
const end = handlers.lastIndexOf('} satisfies Handlers;');
const stub =
  `  // Written by make scaffold: the answer is ${resultSchema} (validated), the input and ctx.row are typed.\n` +
  `  '${op}': () => {\n    throw new Error('${op}: the handler is not written yet');\n  },\n`;
writeFileSync(at(handlerFile), handlers.slice(0, end) + stub + handlers.slice(end));

const adminOnly = access === 'platform-admin' || (typeof access === 'object' && access.role !== undefined);
mkdirSync(dirname(at(testFile)), { recursive: true });
writeFileSync(
  at(testFile),
  `/**
 * ${op} (${method} ${path}), written by make scaffold: it fails until the handler is written.
 * Add the cases of its rules and of every error it declares; the access cases (401, roles, another
 * organization's row, a missing row) are test/contract/access.test.ts's.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { procedures } from '../../generated/procedures.ts';
import { exampleInput, restRequest } from '../support/example-inputs.ts';
import { seedExamples } from '../support/example-rows.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import type { TestUser } from '../support/users.ts';

const procedure = procedures['${op}'];
let server: TestServer;
let caller: TestUser;
beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  // The rows the contract's examples name, owned by the caller${adminOnly ? ' (a platform admin)' : ''}.${resource && !['workspace', 'document', 'job', 'team', 'organization'].includes(resource) ? `\n  // They hold no ${resource}: insert the row the example input names here.` : ''}
  caller = await seedExamples(server${adminOnly ? ", { role: 'admin' }" : ''});
});
afterAll(() => server.close());

it('answers its example input over RPC', async () => {
  const response = await server.fetch('/rpc/${[group, ...rest].join('/')}', {
    method: 'POST',
    headers: { ...caller.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ json: exampleInput(procedure) }),
  });
  expect(response.status).toBe(200);
  expect((await response.json()).json).toEqual({ done: true });
});

it('answers its example input over REST', async () => {
  const { path, init } = restRequest(procedure, exampleInput(procedure));
  const response = await server.fetch(path, { ...init, headers: { ...(init.headers as Record<string, string>), ...caller.headers } });
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ done: true });
});
`,
);

// The TypeScript it wrote, in the house format (.prettierrc.json), so make lint's format check passes.
for (const file of ['test/unit/operation-examples.test.ts', handlerFile, testFile]) {
  writeFileSync(at(file), await format(read(file), { ...(await resolveConfig(at(file))), filepath: at(file) }));
}

// Codegen through this very node: its redocly child finds node on PATH, so PATH gets node's folder.
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${at('node_modules/.bin')}:${process.env.PATH ?? ''}:/usr/bin:/bin` };
execFileSync(process.execPath, [at('codegen/index.ts')], { cwd: root, env, stdio: 'inherit' });

console.log(`make scaffold wrote ${op} (${method} ${path}):
  ${itemFile}${existingRef ? '' : ' and openapi/openapi.yaml'}: the operation; openapi/components/schemas/${resultSchema}.yaml${fields.some((f) => f.in === 'body') ? ` and ${inputSchema}.yaml` : ''}: its schemas
  test/unit/operation-examples.test.ts: its bad input
  ${handlerFile}: the handler stub (it throws)
  ${testFile}: the test (fails until the handler is written)
  generated/, clients/typescript/, docs/operations.md: codegen
Next: edit the contract's answer and input, write the handler, run make lint and ${testFile}.`);

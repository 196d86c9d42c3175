/**
 * `make scaffold` (scripts/scaffold.ts) on a throwaway copy of the working tree (node_modules
 * linked, no .git): it adds workspaces.archive, touches only the files docs/adding-an-operation.md
 * lists, and its test fails while the handler is the stub; with a one-line handler, lint (Redocly
 * on the sources and the bundles, tsc), the contract tests and its own test pass. The copy's
 * vitest, Redocly and tsc are children, the slowest part (test/support/throwaway-copy.ts).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changedPaths, root, throwawayCopy, type Run, type ThrowawayCopy } from '../support/throwaway-copy.ts';

const ARGS = ['OP=workspaces.archive', 'METHOD=POST', 'PATH=/workspaces/{id}/archive', 'ACCESS={ permission: workspace:update, tenant: row, resource: workspace }'];
/** The files docs/adding-an-operation.md says the scaffold writes by hand, besides codegen's. */
const WRITTEN = [
  'openapi/paths/workspaces.yaml',
  'openapi/openapi.yaml',
  'openapi/components/schemas/WorkspacesArchiveResult.yaml',
  'test/unit/operation-examples.test.ts',
  'src/workspaces/procedures.ts',
  'test/workspaces/archive.test.ts',
];
// Codegen's: generated/, the client package, the operations table and the README's list of procedures.
const GENERATED = /^(generated\/|clients\/typescript\/|docs\/operations\.md$|README\.md$)/;

let copy: ThrowawayCopy;
let before: Map<string, string>;

const scaffold = (args = ARGS) => copy.run(['scripts/scaffold.ts', ...args]);

beforeAll(async () => {
  copy = await throwawayCopy('scaffold-');
  before = await copy.snapshot();
}, 60_000);
afterAll(() => copy?.remove());

describe('make scaffold refuses bad arguments before writing anything', () => {
  it.each([
    [['OP=Workspaces', 'METHOD=POST', 'PATH=/x', 'ACCESS=session'], 'OP=Workspaces: a procedure name is <group>.<name>'],
    [['OP=workspaces.archive', 'METHOD=FETCH', 'PATH=/x', 'ACCESS=session'], 'METHOD=FETCH: one of GET, POST, PUT, PATCH, DELETE'],
    [['OP=workspaces.archive', 'METHOD=POST', 'PATH=/api/v1/x', 'ACCESS=session'], 'without the /api/v1 prefix'],
    [['OP=workspaces.archive', 'METHOD=POST', 'PATH=/x'], 'ACCESS= is required'],
    [['OP=workspaces.archive', 'METHOD=POST', 'PATH=/x', 'ACCESS={ permission: workspace:fly, tenant: organizationId }'], 'permission workspace:fly is not in src/auth/permissions.ts'],
    [['OP=workspaces.archive', 'METHOD=POST', 'PATH=/x', 'ACCESS={ permission: workspace:update, tenant: row, resource: workspace }'], "the row's id field id must be a parameter of PATH=/x"],
    [['OP=widgets.spin', 'METHOD=POST', 'PATH=/widgets', 'ACCESS=session'], 'widgets is a new group'],
    [['OP=workspaces.update', 'METHOD=PUT', 'PATH=/workspaces/{id}', 'ACCESS=session'], 'workspaces.update already exists'],
    [['OP=workspaces.replace', 'METHOD=PATCH', 'PATH=/workspaces/{id}', 'ACCESS=session'], 'PATCH /workspaces/{id} already exists'],
  ])('%j', async (args, message) => {
    const { code, out } = await scaffold(args);
    expect(code, out).toBe(2);
    expect(out).toContain(message);
    expect(await copy.snapshot()).toEqual(before);
  });
});

describe('make scaffold OP=workspaces.archive on a copy', () => {
  let written: Run;
  beforeAll(async () => {
    written = await scaffold();
  }, 120_000);

  it("writes the files the docs list, and codegen's", async () => {
    expect(written.code, written.out).toBe(0);
    const after = await copy.snapshot();
    const changed = changedPaths(before, after);
    expect(changed.filter((path) => !GENERATED.test(path))).toEqual([...WRITTEN].sort());
    expect(changed).toContain('generated/procedures.ts');
    expect([...before.keys()].filter((path) => !after.has(path))).toEqual([]);
    const docs = await readFile(join(root, 'docs/adding-an-operation.md'), 'utf8');
    for (const path of WRITTEN)
      expect(docs, path).toContain(
        path
          .replace('workspaces.yaml', '<group>.yaml')
          .replace('WorkspacesArchiveResult', '<Name>Result')
          .replace('src/workspaces/', 'src/<group>/')
          .replace('test/workspaces/archive', 'test/<group>/<name>'),
      );
  });

  it('refuses to run twice', async () => {
    const { code, out } = await scaffold();
    expect(code).toBe(2);
    expect(out).toContain('workspaces.archive already exists');
  });

  it('its test fails on the stub, with a 500', async () => {
    const { code, out } = await copy.vitest(['test/workspaces/archive.test.ts']);
    expect(code, out).not.toBe(0);
    expect(out).toContain('expected 500 to be 200');
  }, 120_000);

  it('with a one-line handler, lint, the contract tests and its test pass', async () => {
    const file = join(copy.dir, 'src/workspaces/procedures.ts');
    const source = await readFile(file, 'utf8');
    const stub = /'workspaces\.archive': \(\) => \{\n.*\n {2}\},\n/;
    expect(source).toMatch(stub);
    await writeFile(file, source.replace(stub, "'workspaces.archive': () => ({ done: true }),\n"));

    const [redocly, tsc, tests] = await Promise.all([
      copy.run(['node_modules/@redocly/cli/bin/cli.js', 'lint', '--config', 'openapi/redocly.yaml', 'v1', 'v1-served']),
      copy.tsc(),
      copy.vitest(['test/workspaces/archive.test.ts', 'test/unit/operation-examples.test.ts', 'test/unit/declared-statuses.test.ts', 'test/contract/access.test.ts']),
    ]);
    expect(redocly.code, redocly.out).toBe(0);
    expect(tsc.code, tsc.out).toBe(0);
    expect(tests.code, tests.out).toBe(0);
    expect((await copy.run(['codegen/index.ts', '--check'])).code).toBe(0);
    // What it wrote is in the house format (make lint checks it).
    const prettier = await copy.run(['node_modules/prettier/bin/prettier.cjs', '--check', ...WRITTEN.filter((path) => path.endsWith('.ts'))]);
    expect(prettier.code, prettier.out).toBe(0);
  }, 240_000);
});

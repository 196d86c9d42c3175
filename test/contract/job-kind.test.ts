/**
 * Adding a job kind, done once as docs/contract-changes.md ("Adding a job kind") says, on a
 * throwaway copy of the working tree: `document.count` (the words of a document's extracted text,
 * 1 credit). Each step is checked the way a developer would meet it: after the contract and
 * codegen, tsc names exactly the two places the kind is still missing; with them, the one-source
 * test names the database's CHECK and the CLI's docs; with those, Redocly, the one-source and
 * frozen-migration tests pass and `make contract-diff` calls the kind non-breaking. Only the files
 * the docs list change, besides codegen's and the changelog. The copy's tsc and vitest are
 * children, the slowest part.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changedPaths, root, throwawayCopy, type ThrowawayCopy } from '../support/throwaway-copy.ts';

const KIND = 'document.count';
const SCHEMAS = 'openapi/components/schemas';
/** The files docs/contract-changes.md lists, the migration's name aside (its number comes next). */
const LISTED = [
  `${SCHEMAS}/JobKind.yaml`,
  `${SCHEMAS}/JobsCreateDocumentCountInput.yaml`,
  `${SCHEMAS}/JobsCreateInput.yaml`,
  `${SCHEMAS}/Job.yaml`,
  'src/jobs/kinds.ts',
  'src/credits/pricing.ts',
  'sql/checksums.txt',
  'docs/cli.md',
];
// Codegen's (generated/, the client package, the operations table, the README's list) and contract-diff's changelog.
const WRITTEN_BY_TOOLS = /^(generated\/|clients\/typescript\/|docs\/operations\.md$|README\.md$|docs\/contract-changelog\.md$)/;

let copy: ThrowawayCopy;
let before: Map<string, string>;
let migration: string;

/** Replaces `from` (which must be there) with `to` in a file of the copy. */
async function edit(path: string, from: string | RegExp, to: string): Promise<void> {
  const file = join(copy.dir, path);
  const source = await readFile(file, 'utf8');
  const changed = source.replace(from, to);
  expect(changed, `${path} no longer has ${String(from)}`).not.toBe(source);
  await writeFile(file, changed);
}

/** The files tsc reports errors in. */
const filesWithErrors = (out: string): string[] => [...new Set([...out.matchAll(/^(\S+?)\(\d+,\d+\): error/gm)].map(([, file]) => file!))].sort();

beforeAll(async () => {
  copy = await throwawayCopy('job-kind-');
  before = await copy.snapshot();
  const numbers = (await readdir(join(root, 'sql')))
    .map((name) => /^(\d{4})_/.exec(name)?.[1])
    .filter(Boolean)
    .map(Number);
  migration = `sql/${String(Math.max(...numbers) + 1).padStart(4, '0')}_job_kind_document_count.sql`;
}, 60_000);
afterAll(() => copy?.remove());

describe(`adding the job kind ${KIND} as docs/contract-changes.md says`, () => {
  it('the docs list the files this test touches', async () => {
    const docs = await readFile(join(root, 'docs/contract-changes.md'), 'utf8');
    const section = docs.slice(docs.indexOf('### Adding a job kind'), docs.indexOf('## The version rule'));
    for (const path of LISTED) expect(section, path).toContain(path.replace('DocumentCount', '<Kind>'));
    expect(section).toContain('sql/NNNN_<name>.sql');
  });

  it('after the contract and codegen, tsc names the two places still missing: the runner and the price', async () => {
    await edit(`${SCHEMAS}/JobKind.yaml`, 'enum: [document.extract, document.index, text.embed, workspace.index]', `enum: [document.extract, document.index, text.embed, workspace.index, ${KIND}]`);
    await edit(`${SCHEMAS}/JobKind.yaml`, 'in one job that reports its progress.', `in one job that reports its progress, \`${KIND}\` (1) counts the words of a document's extracted text.`);
    const extract = await readFile(join(copy.dir, SCHEMAS, 'JobsCreateDocumentExtractInput.yaml'), 'utf8');
    await writeFile(
      join(copy.dir, SCHEMAS, 'JobsCreateDocumentCountInput.yaml'),
      extract
        .replace(
          /^description: >-\n(?: {2}.*\n)+/m,
          `description: >-\n  The body of jobs.create for a \`${KIND}\` job (1 AI credit): count the words of a \`ready\`\n  document's extracted text. Takes no \`input\`.\n`,
        )
        .replaceAll('document.extract', KIND)
        .replace('The document to extract;', 'The document whose words to count;'),
    );
    await edit(`${SCHEMAS}/JobsCreateInput.yaml`, '  - $ref: JobsCreateTextEmbedInput.yaml\n', '  - $ref: JobsCreateTextEmbedInput.yaml\n  - $ref: JobsCreateDocumentCountInput.yaml\n');
    await edit(`${SCHEMAS}/JobsCreateInput.yaml`, '    text.embed: JobsCreateTextEmbedInput.yaml\n', `    text.embed: JobsCreateTextEmbedInput.yaml\n    ${KIND}: JobsCreateDocumentCountInput.yaml\n`);
    await edit(`${SCHEMAS}/Job.yaml`, 'document.index `{ chunks, model }`,', `document.index \`{ chunks, model }\`, ${KIND} \`{ words }\`,`);
    const codegen = await copy.run(['codegen/index.ts']);
    expect(codegen.code, codegen.out).toBe(0);

    const tsc = await copy.tsc();
    expect(tsc.code).not.toBe(0);
    expect(filesWithErrors(tsc.out), tsc.out).toEqual(['src/credits/pricing.ts', 'src/jobs/kinds.ts']);
  }, 240_000);

  it('with the runner and the price it compiles, and the one-source test names the CHECK and the CLI docs', async () => {
    await edit(
      'src/jobs/kinds.ts',
      "  'text.embed': async (job, deps) => {",
      [
        `  '${KIND}': async (job, deps) => {`,
        '    const stored = await readIndexableText(deps.sql, (await documentOf(job, deps)).id);',
        "    if (!stored) throw new JobFailure('The document has no extracted text yet: run document.extract first.');",
        '    return { words: stored.text.split(/\\s+/).filter(Boolean).length };',
        '  },',
        '',
        "  'text.embed': async (job, deps) => {",
      ].join('\n'),
    );
    await edit(
      'src/jobs/kinds.ts',
      "import { findDocument, type Document } from '../documents/store.ts';\n",
      "import { findDocument, type Document } from '../documents/store.ts';\nimport { readIndexableText } from '../documents/text-store.ts';\nimport { JobFailure } from './job-failure.ts';\n",
    );
    await edit('src/credits/pricing.ts', "  'text.embed': 1,\n", `  'text.embed': 1,\n  '${KIND}': 1,\n`);
    const [tsc, oneSource] = await Promise.all([copy.tsc(), copy.vitest(['test/unit/one-source.test.ts'])]);
    expect(tsc.code, tsc.out).toBe(0);
    expect(oneSource.code).not.toBe(0);
    expect(oneSource.out).toContain(KIND);
    expect(oneSource.out).toMatch(/FAIL .*docs\/cli\.md names each in its `jobs run` row/);
    expect(oneSource.out).toMatch(/FAIL .*allows exactly the contract's kinds/);
  }, 240_000);

  it('with the migration and the CLI row, lint and the tests pass, and contract-diff calls it non-breaking', async () => {
    const checks = await readFile(join(copy.dir, 'sql/0005_jobs.sql'), 'utf8');
    expect(checks).toContain("check (kind in ('document.extract', 'document.index', 'text.embed'))");
    const sql = [
      `-- The ${KIND} job kind (docs/contract-changes.md, "Adding a job kind").`,
      'alter table jobs drop constraint jobs_kind_check,',
      `  add constraint jobs_kind_check check (kind in ('document.extract', 'document.index', 'text.embed', 'workspace.index', '${KIND}')) not valid;`,
      '',
    ].join('\n');
    await writeFile(join(copy.dir, migration), sql);
    const listed = await copy.run([
      '-e',
      `
      const { createHash } = require('node:crypto');
      const { appendFileSync, readFileSync } = require('node:fs');
      const name = process.argv[1];
      appendFileSync('sql/checksums.txt', createHash('sha256').update(readFileSync('sql/' + name)).digest('hex') + '  ' + name + '\\n');
    `,
      migration.slice('sql/'.length),
    ]);
    expect(listed.code, listed.out).toBe(0);
    await edit('docs/cli.md', '(`document.extract` and `document.index` take `--document`', `(\`document.extract\`, \`document.index\` and \`${KIND}\` take \`--document\``);

    const [redocly, tests, diff] = await Promise.all([
      copy.run(['node_modules/@redocly/cli/bin/cli.js', 'lint', '--config', 'openapi/redocly.yaml', 'v1', 'v1-served']),
      copy.vitest(['test/unit/one-source.test.ts', 'test/unit/frozen-migrations.test.ts', 'test/unit/operation-examples.test.ts']),
      copy.run(['scripts/contract-diff.ts']),
    ]);
    expect(redocly.code, redocly.out).toBe(0);
    expect(tests.code, tests.out).toBe(0);
    expect(diff.code, diff.out).toBe(0);
    const changelog = await readFile(join(copy.dir, 'docs/contract-changelog.md'), 'utf8');
    const unreleased = changelog.slice(changelog.indexOf('<!-- contract-diff:begin'), changelog.indexOf('<!-- contract-diff:end'));
    expect(unreleased).toContain(KIND);
    expect(unreleased).toContain('#### Non-breaking');
    expect(unreleased).not.toContain('#### Breaking');

    const changed = changedPaths(before, await copy.snapshot());
    expect(changed.filter((path) => !WRITTEN_BY_TOOLS.test(path))).toEqual([...LISTED, migration].sort());
  }, 240_000);
});

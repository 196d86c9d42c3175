/**
 * The client package as a partner gets it: `npm pack` in clients/typescript (its prepack builds
 * dist/), the tarball installed offline into a folder outside the repository, and a plain .mjs
 * script there, run by the machine's node, that imports '@workspace-api/client' and goes the whole
 * way against a live server: sign up, an organization, a workspace, an upload, a document.index
 * job followed on the stream until it succeeded, a search. Also: the tarball holds only the built
 * package (no source), declares no dependency, installs the bundled `workspace-api` bin, and its
 * .d.ts type a TypeScript consumer's code. Then the installed `workspace-api` does the same as a
 * person would, in a terminal (`script` gives it one): signs in, uploads with its progress bar,
 * follows the index job live with its spinner, and searches.
 */
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { machineEnv as machine, packClient, ROOT, run } from './pack.ts';

/** The partner's script: the package's public API only, the identity routes with plain fetch. */
const PARTNER_SCRIPT = `
import { ApiClientError, createClient } from '@workspace-api/client';

const base = process.env.API_URL;
const say = (step, value) => console.log(JSON.stringify({ step, ...value }));
const identity = async (path, body, token) => {
  const response = await fetch(base + '/api/auth' + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: 'Bearer ' + token } : {}) },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(path + ' answered ' + response.status + ': ' + (await response.text()));
  return { response, body: await response.json() };
};

say('node', { version: process.version });
const suffix = Math.random().toString(36).slice(2, 10);
const signUp = await identity('/sign-up/email', { name: 'Pat Partner', email: 'pat-' + suffix + '@example.com', password: 'a partner password' });
const token = signUp.response.headers.get('set-auth-token');
say('signed-up', { token: typeof token === 'string' && token === signUp.body.token });
const { body: organization } = await identity('/organization/create', { name: 'Partner Co', slug: 'partner-' + suffix }, token);

const client = createClient({ baseUrl: base, token });
const workspace = await client.workspaces.create({ organizationId: organization.id, name: 'Field notes', slug: 'field-notes' });
say('workspace', { id: workspace.id, createdAtIsDate: workspace.createdAt instanceof Date });

const missing = await client.workspaces.get({ organizationId: organization.id, slug: 'no-such-workspace' }).catch((error) => error);
say('error', { isApiClientError: missing instanceof ApiClientError, code: missing.code, status: missing.status, requestId: missing.requestId });

const bytes = new TextEncoder().encode(process.env.TEXT);
const { document, upload } = await client.documents.createUpload({
  organizationId: organization.id, workspaceId: workspace.id, name: 'lighthouse.txt', contentType: 'text/plain', size: bytes.byteLength,
});
const put = await fetch(upload.url, { method: upload.method, headers: upload.headers, body: bytes });
const completed = await client.documents.complete({ id: document.id });
say('uploaded', { put: put.status, status: completed.status, size: completed.size });

// The stream first (its ready event), then the job: every change of the job comes after.
const stream = client.jobs.stream({ organizationId: organization.id });
const ready = await stream.next();
say('stream', { first: ready.value.event, expiresAtIsDate: ready.value.data.expiresAt instanceof Date });
const job = await client.jobs.create({ organizationId: organization.id, kind: 'document.index', documentId: document.id });
const statuses = [job.status];
for await (const event of stream) {
  if (event.event !== 'job' || event.data.id !== job.id) continue;
  statuses.push(event.data.status);
  if (['succeeded', 'failed', 'canceled'].includes(event.data.status)) break;
}
say('job', { statuses });

const found = await client.documents.search({ workspaceId: workspace.id, query: process.env.QUERY, limit: 3 });
say('search', { first: found.results[0]?.documentId === document.id, text: found.results[0]?.text ?? null });
`;

/** A TypeScript consumer: the shipped .d.ts type the procedures (a wrong input fails to compile). */
const CONSUMER_TS = `
import { createClient, ApiClientError, type ProcedureEvent } from '@workspace-api/client';
const client = createClient({ baseUrl: 'http://127.0.0.1:1', token: 't', retries: 0 });
export async function check(): Promise<Date> {
  const workspace = await client.workspaces.create({ organizationId: 'org_x', name: 'A', slug: 'a' }, { idempotencyKey: 'k' });
  // @ts-expect-error documents.search needs a query
  await client.documents.search({ workspaceId: workspace.id });
  for await (const event of client.jobs.stream({ organizationId: 'org_x' })) {
    const typed: ProcedureEvent<'jobs.stream'> = event;
    if (typed.event === 'job') return typed.data.createdAt;
  }
  throw new ApiClientError({ code: 'NOT_FOUND', status: 404, message: 'no job' });
}
`;

const TEXT = 'The lighthouse keeper writes down the tide every morning at six.\nHarbour pilots read the logbook before the ferries leave.\n';

let folder: string;
let tarball: string;
let server: TestServer;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'workspace-api-partner-'));
  expect(folder.startsWith(ROOT)).toBe(false);
  // Runs the prepack script (scripts/build.mjs: tsc, and esbuild for the CLI), then packs.
  tarball = await packClient(folder);
  await writeFile(join(folder, 'package.json'), `${JSON.stringify({ name: 'partner-app', private: true, type: 'module' }, null, 2)}\n`);
  await run('npm', ['install', tarball, '--offline', '--no-audit', '--no-fund'], { cwd: folder, env: machine });
  await writeFile(join(folder, 'partner.mjs'), PARTNER_SCRIPT);
  server = await startTestServer();
}, 180_000);

afterAll(async () => {
  await server?.close();
  if (folder) await rm(folder, { recursive: true, force: true });
});

describe('the packed client package', () => {
  it('is named and versioned from the contract, and holds the built library only, without dependencies', async () => {
    const contract = JSON.parse(await readFile(join(ROOT, 'generated', 'openapi.json'), 'utf8'));
    expect(tarball.endsWith(`workspace-api-client-${contract.info.version}.tgz`)).toBe(true);
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout
      .trim()
      .split('\n')
      .map((path) => path.replace(/^package\//, ''));
    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/client.js', 'dist/runtime.js', 'dist/wire.js', 'dist/cli.js']));
    expect(files.filter((path) => !path.startsWith('dist/') && path !== 'package.json' && path !== 'README.md')).toEqual([]);
    expect(files.filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts'))).toEqual([]);

    const installed = join(folder, 'node_modules', '@workspace-api', 'client');
    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ name: '@workspace-api/client', version: contract.info.version, type: 'module' });
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies', 'bundledDependencies']) expect(manifest[field]).toBeUndefined();
    // Installing it brought nothing else along.
    expect((await readdir(join(folder, 'node_modules'))).filter((name) => !name.startsWith('.'))).toEqual(['@workspace-api']);
    // The command-line tool is installed as a bin, and runs with its libraries inlined (none are installed).
    const { stdout: cliVersion } = await run(join(folder, 'node_modules', '.bin', 'workspace-api'), ['--version'], { env: machine });
    expect(cliVersion.trim()).toBe(contract.info.version);
    // The built JavaScript reaches nothing outside the package: no bare import, no Node module.
    for (const name of (await readdir(join(installed, 'dist'))).filter((file) => file.endsWith('.js') && file !== 'cli.js')) {
      const text = await readFile(join(installed, 'dist', name), 'utf8');
      const specifiers = [...text.matchAll(/\b(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((match) => match[1]);
      expect(
        specifiers.filter((specifier) => !specifier!.startsWith('./')),
        name,
      ).toEqual([]);
    }
  });

  it("types a TypeScript consumer's code with its .d.ts", async () => {
    await writeFile(join(folder, 'consumer.ts'), CONSUMER_TS);
    await writeFile(
      join(folder, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: [], strict: true, noEmit: true },
        files: ['consumer.ts'],
      }),
    );
    const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
    const result = await run(tsc, ['-p', folder], { cwd: folder }).then(
      () => 'ok',
      (error: { stdout: string }) => error.stdout,
    );
    expect(result).toBe('ok');
  }, 60_000);

  it('signs up, creates a workspace, uploads, follows an index job on the stream and searches, from a folder outside the repository', async () => {
    const { stdout: machineNode } = await run('node', ['--version'], { env: machine });
    const { stdout } = await run('node', ['partner.mjs'], {
      cwd: folder,
      env: { ...machine, API_URL: server.origin, TEXT, QUERY: 'lighthouse keeper tide' },
    }).catch(async (error: { stdout: string; stderr: string }) => {
      throw new Error(`partner.mjs failed:\n${error.stdout}\n${error.stderr}`);
    });
    const steps = Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .map(({ step, ...value }) => [step, value]),
    );
    expect(steps.node).toEqual({ version: machineNode.trim() });
    expect(steps['signed-up']).toEqual({ token: true });
    expect(steps.workspace).toMatchObject({ id: expect.stringMatching(/^ws_/), createdAtIsDate: true });
    expect(steps.error).toEqual({ isApiClientError: true, code: 'NOT_FOUND', status: 404, requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(steps.uploaded).toEqual({ put: 200, status: 'ready', size: new TextEncoder().encode(TEXT).byteLength });
    expect(steps.stream).toEqual({ first: 'ready', expiresAtIsDate: true });
    expect(steps.job!.statuses[0]).toBe('queued');
    expect(steps.job!.statuses.at(-1)).toBe('succeeded');
    expect(steps.search).toEqual({ first: true, text: expect.stringContaining('lighthouse keeper') });
  }, 180_000);

  it('the installed workspace-api signs in, uploads with a progress bar, follows its job live and searches', async () => {
    const suffix = Math.random().toString(36).slice(2, 10);
    const email = `cli-${suffix}@example.com`;
    const password = 'a partner password';
    const identity = async (path: string, body: unknown, token?: string) => {
      const response = await fetch(`${server.origin}/api/auth${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
      expect(response.status, path).toBe(200);
      return response;
    };
    const token = (await identity('/sign-up/email', { name: 'Cleo CLI', email, password })).headers.get('set-auth-token')!;
    await identity('/organization/create', { name: 'CLI Co', slug: `cli-${suffix}` }, token);

    const bin = join(folder, 'node_modules', '.bin', 'workspace-api');
    const env = { ...machine, WORKSPACE_API_URL: server.origin, XDG_CONFIG_HOME: join(folder, 'config'), WORKSPACE_API_EMAIL: email, WORKSPACE_API_PASSWORD: password };
    const cli = (args: string[]) => run(bin, args, { cwd: folder, env });
    // In a pseudo-terminal of 100 columns, as a person's shell would be (script -e: its exit code is the command's).
    const inTerminal = (args: string[]) => run('script', ['-qefc', `stty cols 100 rows 40; ${[bin, ...args].map((arg) => `'${arg}'`).join(' ')}`, '/dev/null'], { cwd: folder, env });

    await cli(['login']);
    expect((await stat(join(folder, 'config', 'workspace-api', 'credentials.json'))).mode & 0o777).toBe(0o600);
    const workspace = JSON.parse((await cli(['workspaces', 'create', 'Field notes', '--json'])).stdout);
    await writeFile(join(folder, 'notes.txt'), TEXT.repeat(40));

    const upload = await inTerminal(['documents', 'upload', workspace.id, 'notes.txt']);
    // The bar's own format: "<label> <bar> <percentage>% | <sent> of <size> | <eta> left".
    expect(upload.stdout).toMatch(/\d+% \| [\d.]+ [KMG]?i?B of [\d.]+ [KMG]?i?B/);
    const [document] = JSON.parse((await cli(['documents', 'list', workspace.id, '--json'])).stdout).items;
    expect(document).toMatchObject({ name: 'notes.txt', status: 'ready' });

    // Follows the job on the stream (exit 0 only when it succeeded), its spinner in the terminal.
    const followed = await inTerminal(['jobs', 'run', 'document.index', '--document', document.id]);
    expect(followed.stdout).toContain('succeeded');

    const search = await cli(['search', workspace.id, 'lighthouse', 'keeper', 'tide']);
    expect(search.stdout).toContain('notes.txt');
    expect(search.stdout).toContain('[lighthouse] [keeper]'); // the matched words, in brackets
  }, 180_000);
});

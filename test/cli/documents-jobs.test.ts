/**
 * The working commands of `workspace-api`, each a real process against the real server with its
 * AI service and worker: workspaces create/list, documents upload (the signed PUT and complete),
 * list, text, download and delete, jobs run and jobs follow (exit 0 only for a job that
 * succeeded, 4 for one that failed), and search as a table (a PDF hit with its pages). --json output is exactly one JSON
 * document on stdout.
 */
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pngHeader } from '../support/hostile-documents.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { cliHome, jsonError, runCli, type CliHome, type CliResult } from './support.ts';

const NOTES = '# Harbour log\n\nThe lighthouse keeper counts seventeen gulls every morning before the ferry leaves.\n\nInventory: rope, lamp oil, two spare lenses.\n';

let server: TestServer;
let user: TestUser;
let home: CliHome;
const cli = (...args: string[]) => runCli(args, { ...home.env, WORKSPACE_API_URL: server.origin, WORKSPACE_API_TOKEN: user.token });
/** The one JSON document a --json run printed (JSON.parse fails on anything else on stdout). */
const json = (result: CliResult) => {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
};

beforeAll(async () => {
  server = await startTestServer();
  user = await createUser(server.db);
  await addMembership(server.db, user, 'owner');
  home = await cliHome();
  await writeFile(join(home.dir, 'harbour-log.md'), NOTES);
  await writeFile(join(home.dir, 'huge.png'), pngHeader(7000, 7000));
  await copyFile(new URL('../fixtures/report.pdf', import.meta.url), join(home.dir, 'report.pdf'));
});
afterAll(async () => {
  await home?.remove();
  await server?.close();
});

describe('workspaces, documents, jobs and search from the command line', () => {
  let workspaceId: string;
  let documentId: string;

  it('workspaces create makes the slug from the name; list shows it', async () => {
    const created = json(await cli('workspaces', 'create', 'Harbour Notes', '--json'));
    expect(created).toMatchObject({ name: 'Harbour Notes', slug: 'harbour-notes', id: expect.stringMatching(/^ws_/) });
    workspaceId = created.id;
    expect(json(await cli('workspaces', 'list', '--json'))).toEqual([expect.objectContaining({ id: workspaceId })]);
    const table = await cli('workspaces', 'list');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^ID\\s+SLUG\\s+NAME\\s+CREATED\\n${workspaceId}\\s+harbour-notes\\s+Harbour Notes\\s+\\d{4}-`));
  });

  it('documents upload sends the file and completes it (by workspace slug); stdout is the document as JSON', async () => {
    const document = json(await cli('documents', 'upload', 'harbour-notes', join(home.dir, 'harbour-log.md'), '--json'));
    expect(document).toMatchObject({ workspaceId, name: 'harbour-log.md', contentType: 'text/markdown', size: Buffer.byteLength(NOTES), status: 'ready', uploadedBy: user.id });
    documentId = document.id;
    const page = json(await cli('documents', 'list', workspaceId, '--json'));
    expect(page.items).toEqual([expect.objectContaining({ id: documentId })]);
    const table = await cli('documents', 'list', 'harbour-notes');
    expect(table.stdout).toMatch(new RegExp(`^ID\\s+NAME\\s+TYPE\\s+SIZE\\s+STATUS\\s+CREATED\\n${documentId}\\s+harbour-log\\.md\\s+text/markdown\\s+\\d+ B\\s+ready\\s+`));
  });

  it('jobs run document.index --no-follow queues it; jobs follow watches it to the end and exits 0', { timeout: 120_000 }, async () => {
    const queued = json(await cli('jobs', 'run', 'document.index', '--document', documentId, '--no-follow', '--json'));
    expect(queued).toMatchObject({ id: expect.stringMatching(/^job_/), kind: 'document.index', documentId });
    const followed = await cli('jobs', 'follow', queued.id);
    expect(followed.code).toBe(0);
    expect(followed.stdout).toMatch(new RegExp(`^Job ${queued.id} \\(document\\.index\\) succeeded in [\\d.]+ m?s: [1-9]\\d* chunks? embedded with \\S+\\.\\n$`));
    // Without a terminal the status changes are logged on stderr, the final line alone is on stdout.
    expect(followed.stderr).not.toContain('succeeded');
    const again = json(await cli('jobs', 'follow', queued.id, '--json'));
    expect(again).toMatchObject({ id: queued.id, status: 'succeeded', result: { chunks: expect.any(Number) } });
  });

  it('documents text prints the extracted text', async () => {
    const result = await cli('documents', 'text', documentId);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('The lighthouse keeper counts seventeen gulls every morning');
    expect(json(await cli('documents', 'text', documentId, '--json'))).toMatchObject({ characters: expect.any(Number) });
  });

  it('search prints a table of the best chunks', async () => {
    const result = await cli('search', 'harbour-notes', 'how', 'many', 'gulls', 'does', 'the', 'lighthouse', 'keeper', 'count');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const [header, first] = result.stdout.split('\n');
    expect(header).toMatch(/^#\s+SCORE\s+DOCUMENT\s+CHUNK\s+WHERE\s+TEXT$/);
    // Where the chunk sits (the Markdown heading above it), then the words that matched, stems
    // included ("count" matched "counts"), in [brackets].
    expect(first).toMatch(/^1\s+\d\.\d{4}\s+harbour-log\.md\s+\d+\s+Harbour log\s+.*The \[lighthouse\] \[keeper\] \[counts\] seventeen \[gulls\] every/);
    const answer = json(await cli('search', workspaceId, 'lamp oil', '--limit', '1', '--json'));
    expect(answer.results).toHaveLength(1);
    expect(answer.results[0]).toMatchObject({ documentId, documentName: 'harbour-log.md' });
  });

  it('search filters inside the ranking: by document, media type and creation date', async () => {
    const search = async (...args: string[]) => json(await cli('search', workspaceId, 'lamp', 'oil', '--json', ...args)).results as { documentId: string }[];
    expect((await search('--type', 'text/markdown', '--type', 'application/pdf')).map((hit) => hit.documentId)).toContain(documentId);
    expect(await search('--type', 'application/pdf')).toEqual([]);
    expect((await search('--document', documentId, '--after', '2000-01-01')).map((hit) => hit.documentId)).toContain(documentId);
    expect(await search('--before', '2000-01-01T00:00:00Z')).toEqual([]);
    const bad = await cli('search', workspaceId, 'lamp', '--after', 'yesterday');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--after');
  });

  it('search shows where a PDF hit is: its page, or pages', { timeout: 120_000 }, async () => {
    const pdf = json(await cli('documents', 'upload', workspaceId, join(home.dir, 'report.pdf'), '--json'));
    expect((await cli('jobs', 'run', 'document.index', '--document', pdf.id)).code).toBe(0);
    const answer = json(await cli('search', workspaceId, 'solar array megawatt hours', '--type', 'application/pdf', '--json'));
    const hit = answer.results[0];
    expect(hit).toMatchObject({ documentId: pdf.id, citation: { pages: { first: expect.any(Number), last: 2 } } });
    const pages = hit.citation.pages.first === 2 ? 'p\\. 2' : `pp\\. ${hit.citation.pages.first}-2`;
    const result = await cli('search', workspaceId, 'solar', 'array', 'megawatt', 'hours', '--type', 'application/pdf');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const [header, first] = result.stdout.split('\n');
    expect(header).toMatch(/^#\s+SCORE\s+DOCUMENT\s+CHUNK\s+WHERE\s+TEXT$/);
    expect(first).toMatch(new RegExp(`^1\\s+\\d\\.\\d{4}\\s+report\\.pdf\\s+${hit.index}\\s+${pages}\\s+.*\\[solar\\] \\[array\\]`));
  });

  it('documents download writes the bytes to a file, or to stdout', async () => {
    const target = join(home.dir, 'downloaded.md');
    expect(json(await cli('documents', 'download', documentId, '--output', target, '--json'))).toEqual({ id: documentId, path: target, bytes: Buffer.byteLength(NOTES) });
    expect(await readFile(target, 'utf8')).toBe(NOTES);
    expect(await cli('documents', 'download', documentId)).toEqual({ code: 0, stdout: NOTES, stderr: '' });
    const refused = await cli('documents', 'download', documentId, '--json');
    expect(refused.code).toBe(2);
    expect(jsonError(refused)).toMatchObject({ code: 'USAGE' });
  });

  it('a job that fails exits 4 with a final line saying why', { timeout: 120_000 }, async () => {
    const image = json(await cli('documents', 'upload', workspaceId, join(home.dir, 'huge.png'), '--json'));
    const result = await cli('jobs', 'run', 'document.extract', '--document', image.id);
    expect(result.code).toBe(4);
    expect(result.stdout).toMatch(/^Job job_\w+ \(document\.extract\) failed after [\d.]+ m?s: The image is 7 000 × 7 000 pixels .*\n$/);
    const followed = await cli('jobs', 'follow', result.stdout.split(' ')[1]!, '--json');
    expect(followed.code).toBe(4);
    expect(JSON.parse(followed.stdout)).toMatchObject({ status: 'failed', error: { message: expect.stringContaining('megapixels') } });
  });

  it('service errors print code, message and request id, exit 1', async () => {
    const conflict = await cli('workspaces', 'create', 'Again', '--slug', 'harbour-notes');
    expect(conflict).toMatchObject({ code: 1, stdout: '' });
    expect(conflict.stderr).toMatch(/^Error CONFLICT \(HTTP 409\): .+\nRequest id: [0-9a-f-]{36}\n$/);
    const invalid = await cli('workspaces', 'create', 'Bad', '--slug', 'Not A Slug', '--json');
    expect(invalid).toMatchObject({ code: 1, stdout: '' });
    expect(jsonError(invalid)).toMatchObject({ code: 'BAD_REQUEST', status: 400, requestId: expect.any(String), data: { issues: [expect.objectContaining({ path: ['slug'] })] } });
    const missing = await cli('documents', 'text', `doc_${'a'.repeat(24)}`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^Error NOT_FOUND \(HTTP 404\): /);
    const unknownType = await cli('documents', 'upload', workspaceId, join(home.dir, 'nothing.xyz'));
    expect(unknownType.code).toBe(2);
    const noFile = await cli('documents', 'upload', workspaceId, join(home.dir, 'nothing.md'));
    expect(noFile.code).toBe(6);
    expect(noFile.stderr).toMatch(/^Error LOCAL_FILE: Cannot read .*nothing\.md: ENOENT/);
  });

  it('documents delete removes it', async () => {
    expect(json(await cli('documents', 'delete', documentId, '--json'))).toMatchObject({ id: documentId });
    const gone = await cli('documents', 'text', documentId);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^Error NOT_FOUND/);
  });
});

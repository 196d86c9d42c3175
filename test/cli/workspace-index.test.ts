/**
 * A folder of documents from the command line, each command a real process against the real
 * server with its AI service and worker: `documents upload` of several files (a line each, a few at
 * a time, a file the service refuses reported without stopping the others), then `workspaces index`,
 * one workspace.index job followed live to a summary line and the documents that failed (a file
 * that says it is a PDF and is not), and a second run that has nothing left to do. On a server
 * without a worker the job stays queued: Ctrl-C stops the following only (exit 130, the job goes
 * on), and `jobs cancel` stops the job.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { cliHome, jsonError, runCli, startCli, type CliHome, type CliResult } from './support.ts';

const NOTES: Record<string, string> = {
  'ferry.md': '# Ferry\n\nThe first ferry leaves the harbour at twenty to seven on weekdays.\n',
  'tides.md': '# Tides\n\nHigh water comes twice a day; the spring tides flood the slipway.\n',
  // Says it is a PDF (its extension), is not: its extraction fails.
  'broken.pdf': 'not a pdf',
};
/** Larger than the server's MAX_UPLOAD_BYTES below: documents.createUpload refuses it (413). */
const TOO_LARGE = 70_000;

/** The one JSON document a --json run printed. */
const json = (result: CliResult) => {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
};

describe('documents upload of a folder, then workspaces index', () => {
  let server: TestServer;
  let user: TestUser;
  let home: CliHome;
  let notes: string;
  const cli = (...args: string[]) => runCli(args, { ...home.env, WORKSPACE_API_URL: server.origin, WORKSPACE_API_TOKEN: user.token });
  const documents = new Map<string, string>();

  beforeAll(async () => {
    server = await startTestServer({ env: { MAX_UPLOAD_BYTES: '65536', RATE_LIMIT_PER_MINUTE: '100000' } });
    user = await createUser(server.db);
    await addMembership(server.db, user, 'owner');
    home = await cliHome();
    notes = join(home.dir, 'notes');
    await mkdir(notes);
    for (const [name, text] of Object.entries(NOTES)) await writeFile(join(notes, name), text);
    await writeFile(join(home.dir, 'large.txt'), 'x'.repeat(TOO_LARGE));
    await writeFile(join(home.dir, 'unknown.xyz'), 'what is this');
    expect((await cli('workspaces', 'create', 'Harbour Notes')).code).toBe(0);
  });
  afterAll(async () => {
    await home?.remove();
    await server?.close();
  });

  it('uploads several files, a line each, and suggests indexing them in one job', async () => {
    const paths = Object.keys(NOTES).map((name) => join(notes, name));
    const result = await cli('documents', 'upload', 'harbour-notes', ...paths);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    // In the order they finished: a few go at once.
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      const [, name, id] = /^Uploaded (\S+) \(\d+ B\) as (doc_\w+)\.$/.exec(line) ?? [];
      expect(Object.keys(NOTES), line).toContain(name);
      documents.set(name!, id!);
    }
    expect(result.stderr).toBe('Uploaded 3 files. Index them for search in one job: workspace-api workspaces index harbour-notes\n');
    const page = json(await cli('documents', 'list', 'harbour-notes', '--json'));
    expect(page.items.map((document: { id: string }) => document.id).sort()).toEqual([...documents.values()].sort());
  });

  it('a file the service refuses does not stop the others; --json lists each, the exit code is the failure', async () => {
    await cli('workspaces', 'create', 'Scratch');
    const result = await cli('documents', 'upload', 'scratch', join(home.dir, 'large.txt'), join(notes, 'ferry.md'), '--json');
    expect(result).toMatchObject({ code: 1, stderr: '' });
    expect(JSON.parse(result.stdout)).toEqual([
      { file: join(home.dir, 'large.txt'), error: expect.objectContaining({ code: 'PAYLOAD_TOO_LARGE', status: 413, exitCode: 1, requestId: expect.any(String) }) },
      { file: join(notes, 'ferry.md'), document: expect.objectContaining({ name: 'ferry.md', status: 'ready' }) },
    ]);
    const text = await cli('documents', 'upload', 'scratch', join(notes, 'tides.md'), join(home.dir, 'large.txt'));
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^Uploaded tides\.md \(\d+ B\) as doc_\w+\.\n$/);
    expect(text.stderr).toMatch(new RegExp(`^Error PAYLOAD_TOO_LARGE \\(HTTP 413\\): ${join(home.dir, 'large.txt')}: .+\\n(.+\\n)*Uploaded 1 of 2 files; 1 failed\\.\\n$`));
  });

  it('checks every file before sending any: an unknown type or a missing file ends it, --index and --name take one file', async () => {
    const ferry = join(notes, 'ferry.md');
    const cases: [string[], number, RegExp][] = [
      [[ferry, join(home.dir, 'unknown.xyz')], 2, /^Error USAGE: Cannot tell the media type of .*unknown\.xyz from the extension/],
      [[ferry, join(notes, 'missing.md')], 6, /^Error LOCAL_FILE: Cannot read .*missing\.md: ENOENT/],
      [[ferry, ferry, '--index'], 2, /^Error USAGE: --index takes one file\. Upload the files, then index them in one job: workspace-api workspaces index scratch\n/],
      [[ferry, ferry, '--name', 'one.md'], 2, /^Error USAGE: --name names one document/],
    ];
    const before = json(await cli('documents', 'list', 'scratch', '--json')).items.length;
    for (const [args, code, stderr] of cases) {
      const result = await cli('documents', 'upload', 'scratch', ...args);
      expect(result, args.join(' ')).toMatchObject({ code, stdout: '' });
      expect(result.stderr).toMatch(stderr);
    }
    expect(json(await cli('documents', 'list', 'scratch', '--json')).items).toHaveLength(before);
  });

  it('workspaces index follows the job to a summary line and lists the documents that failed', { timeout: 120_000 }, async () => {
    const result = await cli('workspaces', 'index', 'harbour-notes');
    expect(result.code, result.stderr).toBe(0);
    const [summary, header, row, ...rest] = result.stdout.trimEnd().split('\n');
    expect(summary).toMatch(/^Job job_\w+ \(workspace\.index\) succeeded in [\d.]+ m?s: 2 of 3 documents indexed, 1 failed; [1-9]\d* chunks? embedded with \S+\.$/);
    expect(header).toMatch(/^DOCUMENT\s+NAME\s+REASON$/);
    expect(row).toMatch(new RegExp(`^${documents.get('broken.pdf')}\\s+broken\\.pdf\\s+.*PDF`));
    expect(rest).toEqual([]);
    // Without a terminal its progress is logged on stderr, a line per change of status (at most one a second besides).
    for (const line of result.stderr.trimEnd().split('\n').filter(Boolean)) expect(line).toMatch(/^Job job_\w+ \(workspace\.index\): (queued|running), [0-3]\/3 documents done, [01] failed$/);

    const found = await cli('search', 'harbour-notes', 'when', 'does', 'the', 'first', 'ferry', 'leave', '--json');
    expect(JSON.parse(found.stdout).results[0]).toMatchObject({ documentId: documents.get('ferry.md') });
  });

  it('with the broken document deleted, a second run has nothing to do; --json prints the finished job', { timeout: 120_000 }, async () => {
    expect((await cli('documents', 'delete', documents.get('broken.pdf')!)).code).toBe(0);
    const again = await cli('workspaces', 'index', 'harbour-notes');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^Job job_\w+ \(workspace\.index\) succeeded in [\d.]+ m?s: nothing to index: every ready document is indexed with \S+\.\n$/);
    const job = json(await cli('workspaces', 'index', 'harbour-notes', '--json'));
    expect(job).toMatchObject({ kind: 'workspace.index', status: 'succeeded', progress: { documents: 0, done: 0, failed: 0 }, result: { documents: 0, indexed: 0, failed: 0, failures: [] } });
  });

  it('jobs run workspace.index takes --workspace (by slug), and nothing else', { timeout: 120_000 }, async () => {
    const queued = json(await cli('jobs', 'run', 'workspace.index', '--workspace', 'harbour-notes', '--no-follow', '--json'));
    expect(queued).toMatchObject({ id: expect.stringMatching(/^job_/), kind: 'workspace.index', documentId: null, workspaceId: expect.stringMatching(/^ws_/) });
    const followed = await cli('jobs', 'follow', queued.id);
    expect(followed).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Job job_\w+ \(workspace\.index\) succeeded in .*: nothing to index/) });
    const wrong = await cli('jobs', 'run', 'workspace.index', '--document', documents.get('ferry.md')!);
    expect(wrong).toMatchObject({ code: 2, stderr: 'Error USAGE: A workspace.index job takes --workspace, not --document.\n' });
    const missing = await cli('jobs', 'run', 'workspace.index', '--json');
    expect(jsonError(missing)).toMatchObject({ code: 'USAGE', message: 'A workspace.index job needs --workspace <workspace>.', exitCode: 2 });
  });
});

describe('Ctrl-C while following, on a server without a worker (the job stays queued)', () => {
  let server: TestServer;
  let user: TestUser;
  let home: CliHome;
  const env = () => ({ ...home.env, WORKSPACE_API_URL: server.origin, WORKSPACE_API_TOKEN: user.token });
  const cli = (...args: string[]) => runCli(args, env());

  beforeAll(async () => {
    server = await startTestServer({ env: { WORKER: 'off' } });
    user = await createUser(server.db);
    await addMembership(server.db, user, 'owner');
    home = await cliHome();
    await writeFile(join(home.dir, 'ferry.md'), NOTES['ferry.md']!);
    expect((await cli('workspaces', 'create', 'Harbour Notes')).code).toBe(0);
    expect((await cli('documents', 'upload', 'harbour-notes', join(home.dir, 'ferry.md'))).code).toBe(0);
  });
  afterAll(async () => {
    await home?.remove();
    await server?.close();
  });

  it('stops following without canceling (exit 130, says how to follow or cancel it); jobs cancel stops the job', async () => {
    const running = startCli(['workspaces', 'index', 'harbour-notes'], env());
    await running.stderrContains('(workspace.index): queued, 0/1 documents done, 0 failed\n');
    running.interrupt();
    const result = await running.done;
    expect(result.code).toBe(130);
    expect(result.stdout).toBe('');
    const id = /^Job (job_\w+) /.exec(result.stderr)![1]!;
    expect(result.stderr).toContain(
      `Stopped following job ${id} (workspace.index, queued: 0/1 documents done); the job goes on on the service. Follow it again with \`workspace-api jobs follow ${id}\`, or cancel it with \`workspace-api jobs cancel ${id}\`.\n`,
    );
    const job = await server.fetch(`/api/v1/jobs/${id}`, { headers: { authorization: `Bearer ${user.token}` } });
    expect(await job.json()).toMatchObject({ status: 'queued', progress: { documents: 1, done: 0 } });

    const canceled = await cli('jobs', 'cancel', id);
    expect(canceled).toEqual({ code: 0, stdout: `Canceled job ${id} (workspace.index).\n`, stderr: '' });
    const followed = await cli('jobs', 'follow', id);
    expect(followed).toMatchObject({ code: 4, stdout: `Job ${id} (workspace.index) was canceled.\n` });
    const again = await cli('jobs', 'cancel', id, '--json');
    expect(again.code).toBe(1);
    expect(jsonError(again)).toMatchObject({ code: 'CONFLICT', status: 409 });
  });
});

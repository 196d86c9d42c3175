/**
 * The first run from the command line, each command a real process against the real server (with
 * its AI service and worker): signup saves the session, orgs create makes the organization and
 * orgs use chooses one of several, documents upload --index (or --extract) runs the job and
 * follows it to its end, and search finds the passage. The error paths: an email address already
 * taken, a password the service refuses, a deployment that requires a verified email address, an
 * index job that fails (exit 4 with the job's reason), and a full job queue waited out.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import { pngHeader } from '../support/hostile-documents.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../support/smtp.ts';
import { addMembership, createUser } from '../support/users.ts';
import { cliHome, jsonError, runCli, startCli, type CliHome } from './support.ts';

const PASSWORD = 'a long enough password';
const NOTES = '# Harbour log\n\nThe lighthouse keeper counts seventeen gulls every morning before the ferry leaves.\n';

let server: TestServer;
let home: CliHome;
/** The CLI with the throwaway home (so the session signup saves), pointed at the test server. */
const cli = (args: string[], input?: string) => runCli(args, { ...home.env, WORKSPACE_API_URL: server.origin }, input);
const credentialsFile = () => join(home.configDir, 'workspace-api', 'credentials.json');

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  home = await cliHome();
  await writeFile(join(home.dir, 'harbour-log.md'), NOTES);
  await writeFile(join(home.dir, 'huge.png'), pngHeader(7000, 7000));
});
afterAll(async () => {
  await home?.remove();
  await server?.close();
});

describe('from nothing to a search', () => {
  let workspaceId: string;

  it('signup creates the account, signs in and saves the session as login does', async () => {
    const result = await cli(['signup', '--email', 'grace@example.com', '--name', 'Grace Hopper', '--password-stdin'], `${PASSWORD}\n`);
    expect(result).toMatchObject({ code: 0, stdout: `Created the account grace@example.com on ${server.origin} and signed in.\n` });
    expect(result.stderr).toContain(credentialsFile());
    const saved = JSON.parse(await readFile(credentialsFile(), 'utf8'));
    expect(saved).toMatchObject({ url: server.origin, user: { email: 'grace@example.com', name: 'Grace Hopper' } });
    const me = await cli(['whoami', '--json']);
    expect(JSON.parse(me.stdout)).toMatchObject({ tokenSource: 'login', user: { email: 'grace@example.com' } });
  });

  it("an email address already taken: exit 1, the service's reason and what to do", async () => {
    const result = await cli(['signup', '--email', 'GRACE@example.com', '--name', 'Someone Else', '--password-stdin'], PASSWORD);
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toMatch(
      /^Error USER_ALREADY_EXISTS \(HTTP 422\): An account with this email already exists\.\nRequest id: [0-9a-f-]{36}\nAn account with this email address exists: sign in with `workspace-api login --email <email>`\.\n$/,
    );
  });

  it('a password the service refuses: exit 1, the issue on the password; with --json the same as JSON', async () => {
    const text = await cli(['signup', '--email', 'short@example.com', '--name', 'Short', '--password-stdin'], 'short');
    expect(text).toMatchObject({ code: 1, stdout: '' });
    expect(text.stderr).toMatch(/^Error BAD_REQUEST \(HTTP 400\): .+\n {2}- password: .+\n/);
    const json = await cli(['signup', '--email', 'short@example.com', '--name', 'Short', '--password-stdin', '--json'], 'short');
    expect(jsonError(json)).toMatchObject({ code: 'BAD_REQUEST', status: 400, exitCode: 1, data: { issues: [expect.objectContaining({ path: ['password'] })] } });
  });

  it('without a terminal, what is missing is a usage error (exit 2), nothing is sent', async () => {
    const result = await cli(['signup', '--email', 'nameless@example.com', '--password-stdin'], PASSWORD);
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toBe('Error USAGE: Give the email address, the name and the password (see `workspace-api signup --help`).\n');
  });

  it('orgs create makes the slug from the name, with the caller as owner; a taken slug is exit 1', async () => {
    const created = await cli(['orgs', 'create', '--name', 'Harbour Co']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/^Created organization harbour-co \(org_\w+\); you are its owner\.\n$/);
    expect(JSON.parse((await cli(['orgs', '--json'])).stdout)).toEqual([expect.objectContaining({ slug: 'harbour-co', name: 'Harbour Co', role: 'owner' })]);
    const taken = await cli(['orgs', 'create', '--name', 'Again', '--slug', 'harbour-co', '--json']);
    expect(taken).toMatchObject({ code: 1, stdout: '' });
    expect(jsonError(taken)).toMatchObject({ code: 'CONFLICT', status: 409 });
  });

  it('with two organizations, orgs use chooses the one commands act in', async () => {
    const second = JSON.parse((await cli(['orgs', 'create', '--name', 'Lighthouse Trust', '--slug', 'lighthouse', '--json'])).stdout);
    const ambiguous = await cli(['workspaces', 'list']);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/member of 2 organizations/);
    const used = await cli(['orgs', 'use', 'harbour-co']);
    expect(used).toMatchObject({ code: 0, stderr: '' });
    expect(used.stdout).toMatch(/^Using organization harbour-co \(org_\w+\)\.\n$/);
    expect(JSON.parse(await readFile(credentialsFile(), 'utf8')).organization).toMatchObject({ slug: 'harbour-co' });
    expect(await cli(['workspaces', 'list'])).toMatchObject({ code: 0 });
    // --org still wins over the saved choice.
    expect(JSON.parse((await cli(['workspaces', 'list', '--org', second.id, '--json'])).stdout)).toEqual([]);
    expect((await cli(['orgs', 'use', 'nowhere'])).code).toBe(2);
  });

  it('workspaces create, then documents upload --index runs the index job and follows it to its end', { timeout: 120_000 }, async () => {
    workspaceId = JSON.parse((await cli(['workspaces', 'create', 'Harbour Notes', '--json'])).stdout).id;
    const result = await cli(['documents', 'upload', 'harbour-notes', join(home.dir, 'harbour-log.md'), '--index']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Uploaded harbour-log\.md \(\d+ B\) as doc_\w+\.\nJob job_\w+ \(document\.index\) succeeded in [\d.]+ m?s: [1-9]\d* chunks? embedded with \S+\.\n$/);
    // Without a terminal the status changes are logged on stderr.
    expect(result.stderr).toMatch(/Job job_\w+ \(document\.index\): (queued|running)\n/);
    const search = await cli(['search', 'harbour-notes', 'how many gulls', '--json']);
    expect(JSON.parse(search.stdout).results[0]).toMatchObject({ documentName: 'harbour-log.md', text: expect.stringContaining('seventeen gulls') });
  });

  it('--extract runs only the extraction; --json prints the document and the job as one JSON document', { timeout: 120_000 }, async () => {
    const result = await cli(['documents', 'upload', workspaceId, join(home.dir, 'harbour-log.md'), '--name', 'again.md', '--extract', '--json']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const answer = JSON.parse(result.stdout);
    expect(answer).toMatchObject({
      document: { name: 'again.md', status: 'ready' },
      job: { kind: 'document.extract', status: 'succeeded', documentId: answer.document.id, result: { characters: NOTES.trimEnd().length } },
    });
    const both = await cli(['documents', 'upload', workspaceId, join(home.dir, 'harbour-log.md'), '--index', '--extract']);
    expect(both.code).toBe(2);
  });

  it("an index job that fails: exit 4, the document stays uploaded, the job's reason on stdout", { timeout: 120_000 }, async () => {
    const result = await cli(['documents', 'upload', workspaceId, join(home.dir, 'huge.png'), '--index']);
    expect(result.code).toBe(4);
    expect(result.stdout).toMatch(/^Uploaded huge\.png \(\d+ B\) as doc_\w+\.\nJob job_\w+ \(document\.index\) failed after [\d.]+ m?s: The image is 7 000 × 7 000 pixels .*\n$/);
    const json = await cli(['documents', 'upload', workspaceId, join(home.dir, 'huge.png'), '--index', '--json']);
    expect(json.code).toBe(4);
    expect(JSON.parse(json.stdout)).toMatchObject({ document: { name: 'huge.png' }, job: { status: 'failed', error: { message: expect.stringContaining('megapixels') } } });
  });
});

describe('a deployment that requires a verified email address', () => {
  let verifying: TestServer;
  let smtp: SmtpReceiver;
  beforeAll(async () => {
    smtp = await startSmtpReceiver();
    verifying = await startTestServer({ aiService: false, env: { REQUIRE_EMAIL_VERIFICATION: 'true', EMAIL_PROVIDER: 'smtp', SMTP_URL: smtp.url } });
  });
  afterAll(async () => {
    await verifying?.close();
    await smtp?.stop();
  });

  it('signup creates the account, saves nothing, says to verify and exits 3 (not signed in)', async () => {
    const fresh = await cliHome();
    try {
      const result = await runCli(['signup', '--email', 'ada@example.com', '--name', 'Ada', '--password-stdin'], { ...fresh.env, WORKSPACE_API_URL: verifying.origin }, PASSWORD);
      expect(result).toMatchObject({ code: 3, stdout: `Created the account ada@example.com on ${verifying.origin}.\n` });
      expect(result.stderr).toBe('This service requires a verified email address: open the link sent to ada@example.com, then run `workspace-api login --email ada@example.com`.\n');
      await expect(readFile(join(fresh.configDir, 'workspace-api', 'credentials.json'))).rejects.toMatchObject({ code: 'ENOENT' });
      const login = await runCli(['login', '--email', 'ada@example.com', '--password-stdin'], { ...fresh.env, WORKSPACE_API_URL: verifying.origin }, PASSWORD);
      expect(login.code).toBe(1);
      expect(login.stderr).toMatch(/^Error EMAIL_NOT_VERIFIED \(HTTP 403\): [\s\S]*Open the link in the verification email first/);
    } finally {
      await fresh.remove();
    }
  });
});

describe('a full job queue', () => {
  let idle: TestServer;
  beforeAll(async () => {
    // No worker: queued jobs stay queued, so the cap of one is reached by the test's own job.
    idle = await startTestServer({ aiService: false, env: { WORKER: 'off', MAX_QUEUED_JOBS_PER_ORGANIZATION: '1', RATE_LIMIT_PER_MINUTE: '100000' } });
  });
  afterAll(async () => {
    await idle?.close();
  });

  it('jobs.create answering 429 is waited out, said on stderr, and tried again once a slot is free', { timeout: 60_000 }, async () => {
    const owner = await createUser(idle.db);
    const organizationId = await addMembership(idle.db, owner, 'owner');
    const client = createClient({ baseUrl: idle.origin, token: owner.token });
    const first = await client.jobs.create({ organizationId, kind: 'text.embed', input: { texts: ['one'] } });
    const running = startCli(['jobs', 'run', 'text.embed', '--text', 'two'], { ...home.env, WORKSPACE_API_URL: idle.origin, WORKSPACE_API_TOKEN: owner.token });
    await running.stderrContains('Trying again in 10 s (1 of 5).');
    expect(running.stderr).toMatch(/^The organizations of this organization's owner have 1 queued jobs, the most they may have \(1\); try again once some have run\. Trying again in 10 s/);
    await client.jobs.cancel({ id: first.id });
    // The retry creates the job and follows it; with no worker it stays queued until canceled here.
    await running.stderrContains('(text.embed): queued');
    const second = (await client.jobs.list({ organizationId })).items.find((job) => job.id !== first.id)!;
    await client.jobs.cancel({ id: second.id });
    const result = await running.done;
    expect(result.code).toBe(4);
    expect(result.stdout).toBe(`Job ${second.id} (text.embed) was canceled.\n`);
  });
});

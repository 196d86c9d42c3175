/**
 * `workspace-api` as a process against the real server: login saves the token in a 0600 file
 * under the config folder (0700), whoami and orgs use it, logout ends the session at the server
 * and deletes the file; errors print their code, message and request id with the documented exit
 * codes; every command answers --help.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../clients/typescript/src/cli/program.ts';
import { closedPort } from '../support/ports.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, TEST_PASSWORD, type TestUser } from '../support/users.ts';
import { cliHome, commandPaths, jsonError, runCli, type CliHome } from './support.ts';

const REQUEST_ID = /Request id: [0-9a-f-]{36}\n/;

let server: TestServer;
let user: TestUser;
let org: string;
let home: CliHome;
/** The CLI with the throwaway home, pointed at the test server. */
const cli = (args: string[], input?: string, env: Record<string, string> = {}) => runCli(args, { ...home.env, WORKSPACE_API_URL: server.origin, ...env }, input);
const credentialsFile = () => join(home.configDir, 'workspace-api', 'credentials.json');

beforeAll(async () => {
  server = await startTestServer();
  user = await createUser(server.db, { name: 'Ada Lovelace' });
  org = await addMembership(server.db, user, 'owner');
  home = await cliHome();
});
afterAll(async () => {
  await home?.remove();
  await server?.close();
});

describe('login, whoami, orgs, logout', () => {
  it('login takes the password from stdin and saves the token in a 0600 file in a 0700 folder', async () => {
    const result = await cli(['login', '--email', user.email, '--password-stdin'], `${TEST_PASSWORD}\n`);
    expect(result).toMatchObject({ code: 0, stdout: `Signed in to ${server.origin} as ${user.email}.\n` });
    expect(result.stderr).toContain(credentialsFile());
    expect((await stat(credentialsFile())).mode & 0o777).toBe(0o600);
    expect((await stat(join(home.configDir, 'workspace-api'))).mode & 0o777).toBe(0o700);
    const saved = JSON.parse(await readFile(credentialsFile(), 'utf8'));
    expect(saved).toMatchObject({ url: server.origin, user: { id: user.id, email: user.email } });
    // The saved token is a live session of this user.
    const me = await server.fetch('/api/v1/me', { headers: { authorization: `Bearer ${saved.token}` } });
    expect(await me.json()).toMatchObject({ id: user.id });
  });

  it('whoami answers the signed-in user, as text and as JSON', async () => {
    const text = await cli(['whoami']);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toContain(`${user.email} (Ada Lovelace, ${user.id})`);
    expect(text.stdout).toContain(`service: ${server.origin}`);
    const json = await cli(['whoami', '--json']);
    expect(json).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout)).toMatchObject({ url: server.origin, tokenSource: 'login', user: { id: user.id, email: user.email, name: 'Ada Lovelace' } });
  });

  it('orgs lists the organizations with the role, as a table and as JSON', async () => {
    const text = await cli(['orgs']);
    expect(text.code).toBe(0);
    const [header, row, ...rest] = text.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID\s+SLUG\s+NAME\s+ROLE\s+CREATED$/);
    expect(row).toMatch(new RegExp(`^${org}\\s+\\S+\\s+Org ${org}\\s+owner\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\dZ$`));
    expect(rest).toEqual([]);
    const json = await cli(['orgs', '--json']);
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ id: org, role: 'owner' })]);
  });

  it('never sends the saved token to another address', async () => {
    const elsewhere = `http://127.0.0.1:${await closedPort()}`;
    const result = await cli(['whoami', '--url', elsewhere]);
    expect(result.code).toBe(3);
    expect(result.stderr).toBe(`Error NOT_SIGNED_IN: Not signed in to ${elsewhere} (the saved sign-in is for ${server.origin}). Run \`workspace-api login\`, or pass --token or WORKSPACE_API_TOKEN.\n`);
  });

  it('logout signs out at the server and deletes the file; the token no longer works', async () => {
    const { token } = JSON.parse(await readFile(credentialsFile(), 'utf8'));
    const result = await cli(['logout']);
    expect(result).toMatchObject({ code: 0, stdout: `Signed out of ${server.origin}. Deleted ${credentialsFile()}.\n`, stderr: '' });
    await expect(stat(credentialsFile())).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await server.fetch('/api/v1/me', { headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
    const after = await cli(['whoami']);
    expect(after.code).toBe(3);
    expect(after.stderr).toMatch(/^Error NOT_SIGNED_IN: Not signed in to /);
    expect(await cli(['logout'])).toMatchObject({ code: 3 });
  });

  it('without XDG_CONFIG_HOME the file goes to ~/.config; the password may come from WORKSPACE_API_PASSWORD', async () => {
    const { XDG_CONFIG_HOME: _, ...env } = home.env;
    const result = await runCli(['login', '--json'], { ...env, WORKSPACE_API_URL: server.origin, WORKSPACE_API_EMAIL: user.email, WORKSPACE_API_PASSWORD: TEST_PASSWORD });
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const path = join(home.dir, '.config', 'workspace-api', 'credentials.json');
    expect(JSON.parse(result.stdout)).toMatchObject({ url: server.origin, user: { id: user.id }, credentialsPath: path });
    expect(JSON.parse(result.stdout)).not.toHaveProperty('token');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await runCli(['logout'], { ...env, WORKSPACE_API_URL: server.origin })).toMatchObject({ code: 0 });
    await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('errors: code, message and request id on stderr, and the exit code', () => {
  it("a wrong password: exit 1, the service's code and request id, nothing saved", async () => {
    const result = await cli(['login', '--email', user.email, '--password-stdin'], 'not the password');
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^Error INVALID_EMAIL_OR_PASSWORD \(HTTP 401\): .+\n/);
    expect(result.stderr).toMatch(REQUEST_ID);
    await expect(stat(credentialsFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a token the service refuses: exit 3 with UNAUTHORIZED; with --json the error is JSON on stderr', async () => {
    const text = await cli(['whoami', '--token', 'not-a-token']);
    expect(text.code).toBe(3);
    expect(text.stderr).toMatch(/^Error UNAUTHORIZED \(HTTP 401\): .+\n/);
    expect(text.stderr).toMatch(REQUEST_ID);
    const json = await cli(['whoami', '--json'], '', { WORKSPACE_API_TOKEN: 'not-a-token' });
    expect(json).toMatchObject({ code: 3, stdout: '' });
    expect(jsonError(json)).toMatchObject({ code: 'UNAUTHORIZED', status: 401, exitCode: 3, requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  });

  it('a token from the environment is used like a saved one', async () => {
    const result = await cli(['whoami', '--json'], '', { WORKSPACE_API_TOKEN: user.token });
    expect(JSON.parse(result.stdout)).toMatchObject({ tokenSource: 'environment', user: { id: user.id } });
  });

  it('an unreachable service: exit 5', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const result = await cli(['orgs', '--url', url, '--token', user.token]);
    expect(result).toMatchObject({ code: 5, stdout: '' });
    expect(result.stderr).toMatch(new RegExp(`^Error NETWORK_ERROR: Cannot reach ${url} \\(ECONNREFUSED\\)\\.\\n`));
    const rpc = await cli(['whoami', '--json', '--url', url, '--token', user.token]);
    expect(rpc.code).toBe(5);
    expect(jsonError(rpc)).toMatchObject({ code: 'NETWORK_ERROR', exitCode: 5 });
  });

  it.each([
    [['nope'], /unknown command 'nope'/],
    [['whoami', '--bogus'], /unknown option '--bogus'/],
    [['search'], /missing required argument 'workspace'/],
    [['jobs', 'run', 'document.explode'], /Allowed choices are document\.extract, document\.index, text\.embed/],
    [['search', 'ws', 'x', '--limit', '0'], /expected a whole number from 1 to 50/],
    [['workspaces'], /^Usage: workspace-api workspaces/],
    [['orgs', 'create'], /required option '--name <name>' not specified/],
    [['whoami', '--url', 'ftp://example.com'], /^Error USAGE: "ftp:\/\/example\.com" is not an http\(s\) address\.\n$/],
  ])('usage error %j: exit 2', async (args, message) => {
    const result = await cli(args, '', { WORKSPACE_API_TOKEN: user.token });
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toMatch(message);
  });

  it('a usage error with --json is one JSON error on stderr', async () => {
    const result = await cli(['search', '--json']);
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(jsonError(result)).toEqual({ code: 'USAGE', message: "missing required argument 'workspace'", exitCode: 2 });
  });
});

describe('--help', () => {
  const paths = [[], ...commandPaths(buildProgram({ json: false, url: undefined, env: {} }))];

  it('covers the commands of the issue', () => {
    expect(paths.map((path) => path.join(' '))).toEqual(
      expect.arrayContaining([
        'signup',
        'login',
        'logout',
        'whoami',
        'orgs',
        'orgs list',
        'orgs create',
        'orgs use',
        'workspaces list',
        'workspaces create',
        'workspaces index',
        'documents list',
        'documents upload',
        'documents download',
        'documents text',
        'documents delete',
        'jobs run',
        'jobs follow',
        'jobs cancel',
        'search',
      ]),
    );
  });

  it.each(paths.map((path) => [path.join(' ') || '(none)', path]))('every command answers --help: %s', async (_name, path) => {
    const result = await cli([...path, '--help']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(new RegExp(`^Usage: workspace-api${path.map((word) => ` ${word}`).join('')} `));
    expect(result.stdout).toContain('--json');
    expect(result.stdout).toContain('Exit codes:');
  });
});

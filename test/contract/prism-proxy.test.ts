/**
 * The integration flow a contract tester runs through Stoplight Prism as a validating proxy:
 * `prism proxy <served document> <server>/api/v1 --errors` (and the same for /api/auth) in front of
 * the real server. Prism checks each request and each real answer against the document the
 * server serves and names every mismatch in an `sl-violations` header; any such header fails the
 * test, except the specific known ones listed in KNOWN_VIOLATIONS.
 *
 * Prism serves the paths without the servers prefix (toolchain.md): the client calls
 * `<prism>/workspaces`, Prism forwards to `<server>/api/v1/workspaces`. With --errors, a request
 * that breaks the contract is answered by Prism itself (422, or 401 with no credentials at all),
 * so the error answers below are requests the contract allows and the server refuses.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrismProxy, type PrismProcess } from '../support/prism.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

interface Violation {
  location?: string[];
  severity?: string;
  code?: string | number;
  message?: string;
}

/**
 * Violations Prism reports that are known and not fixed yet, each with its cause. Matched by
 * `<METHOD> <path> -> <status>: <violation message>`. Keep this list empty when possible.
 */
const KNOWN_VIOLATIONS: { pattern: RegExp; cause: string }[] = [];

let server: TestServer;
let dir: string;
let v1: PrismProcess;
let auth: PrismProcess;
/** A proxy on a copy of the document that the server cannot meet: proves violations are caught. */
let tampered: PrismProcess;
const seen: { where: string; fromPrism: boolean }[] = [];

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000' } });
  dir = await mkdtemp(join(tmpdir(), 'prism-proxy-'));
  // The served copies (absolute first server <PUBLIC_URL>/api/v1), as a file for Prism.
  const served = await (await fetch(`${server.origin}/api/v1/openapi.json`)).text();
  await writeFile(join(dir, 'v1.json'), served);
  await writeFile(join(dir, 'auth.json'), await (await fetch(`${server.origin}/api/auth/openapi.json`)).text());
  const document = JSON.parse(served);
  const health = document.components.schemas.Health;
  health.required = [...health.required, 'neverSent'];
  health.properties.neverSent = { type: 'string' };
  await writeFile(join(dir, 'tampered.json'), JSON.stringify(document));
  [v1, auth, tampered] = await Promise.all([
    startPrismProxy(join(dir, 'v1.json'), `${server.origin}/api/v1`),
    startPrismProxy(join(dir, 'auth.json'), `${server.origin}/api/auth`),
    startPrismProxy(join(dir, 'tampered.json'), `${server.origin}/api/v1`),
  ]);
}, 120_000);
afterAll(async () => {
  await Promise.all([v1?.close(), auth?.close(), tampered?.close()]);
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Calls through a proxy; fails at once on a violation that is not a known one. */
async function call(prism: PrismProcess, path: string, init: RequestInit & { json?: unknown } = {}) {
  const { json, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (json !== undefined) headers.set('content-type', 'application/json');
  const response = await fetch(`${prism.origin}${path}`, { ...rest, headers, ...(json !== undefined ? { body: JSON.stringify(json) } : {}) });
  const text = await response.text();
  const body = text && (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
  const where = `${rest.method ?? 'GET'} ${path.replace(/\?.*$/, '')} -> ${response.status}`;
  // Prism's own answers (a refused request, a replaced answer) are problem+json; the server's never are.
  seen.push({ where, fromPrism: (response.headers.get('content-type') ?? '').startsWith('application/problem+json') });
  const header = response.headers.get('sl-violations');
  // Over about 8 KiB Prism truncates the header ("Too many violations! <cut JSON>"): keep it raw.
  const violations: Violation[] = !header ? [] : header.startsWith('Too many violations!') ? [{ message: header }] : JSON.parse(header);
  const unknown = violations.map((v) => `${where}: ${(v.location ?? []).join('.')} ${v.message ?? ''}`.trim()).filter((line) => !KNOWN_VIOLATIONS.some((known) => known.pattern.test(line)));
  if (unknown.length > 0) throw new Error(`Prism reports violations:\n${unknown.join('\n')}\nbody: ${text.slice(0, 2000)}`);
  if (seen.at(-1)!.fromPrism) throw new Error(`${where} is Prism's own answer, not the server's:\n${text.slice(0, 2000)}`);
  return { status: response.status, body, headers: response.headers };
}

const bytes = new TextEncoder().encode('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
const state = { token: '', cookie: '', headers: {} as Record<string, string>, otherHeaders: {} as Record<string, string>, org: '', otherOrg: '', team: '', workspace: '', document: '' };

describe('through prism proxy --errors in front of the real server', () => {
  it('the proxy reports violations: a request that breaks the contract, an answer that breaks it', async () => {
    // A request outside the contract never reaches the server: Prism answers 422 and names it.
    const refused = await fetch(`${v1.origin}/documents`, {
      method: 'POST',
      headers: { authorization: 'Bearer x', 'content-type': 'application/json' },
      body: JSON.stringify({ organizationId: 'org_aaaaaaaaaaaaaaaaaaaaaaaa', workspaceId: 'ws_aaaaaaaaaaaaaaaaaaaaaaaa', name: 'a.exe', contentType: 'application/x-msdownload', size: 1 }),
    });
    // (Refused requests carry the violations in the problem+json body, not in sl-violations.)
    expect(refused.status).toBe(422);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await refused.json()) as { validation: unknown }).validation).toEqual([expect.objectContaining({ location: ['body', 'contentType'] })]);
    // The server's real answer checked against a document it cannot meet: Prism replaces it (500).
    const replaced = await fetch(`${tampered.origin}/health`);
    expect(replaced.status).toBe(500);
    expect(JSON.parse(replaced.headers.get('sl-violations') ?? '[]')).toEqual([expect.objectContaining({ location: ['response', 'body'], message: expect.stringContaining('neverSent') })]);
  });

  it('identity: sign up two users, each creates an organization', async () => {
    const first = await call(auth, '/sign-up/email', { method: 'POST', json: { name: 'Proxy One', email: 'proxy-one@example.com', password: 'correct horse battery staple' } });
    expect(first.status).toBe(200);
    state.token = first.body.token;
    state.headers = { authorization: `Bearer ${first.body.token}` };
    const second = await call(auth, '/sign-up/email', { method: 'POST', json: { name: 'Proxy Two', email: 'proxy-two@example.com', password: 'correct horse battery staple' } });
    expect(second.status).toBe(200);
    state.otherHeaders = { authorization: `Bearer ${second.body.token}` };

    const org = await call(auth, '/organization/create', { method: 'POST', headers: state.headers, json: { name: 'Proxy Org', slug: 'proxy-org' } });
    expect(org.status).toBe(200);
    state.org = org.body.id;
    const other = await call(auth, '/organization/create', { method: 'POST', headers: state.otherHeaders, json: { name: 'Other Org', slug: 'other-org' } });
    expect(other.status).toBe(200);
    state.otherOrg = other.body.id;

    state.cookie = first.headers
      .getSetCookie()
      .map((line) => line.split(';')[0]!)
      .find((pair) => pair.startsWith('session='))!;
    expect(state.cookie).toBeDefined();

    const session = await call(auth, '/get-session', { headers: state.headers });
    expect(session.status).toBe(200);
    expect(session.body.user.email).toBe('proxy-one@example.com');
    const anonymous = await call(auth, '/get-session');
    expect(anonymous.status).toBe(200);
    expect((await call(auth, '/list-sessions', { headers: state.headers })).status).toBe(200);
    expect((await call(auth, '/organization/list', { headers: state.headers })).status).toBe(200);
    expect((await call(auth, `/organization/get-full-organization?organizationId=${state.org}`, { headers: state.headers })).status).toBe(200);
    expect((await call(auth, `/organization/list-members?organizationId=${state.org}&limit=10`, { headers: state.headers })).status).toBe(200);
    const team = await call(auth, '/organization/create-team', { method: 'POST', headers: state.headers, json: { organizationId: state.org, name: 'Proxy team' } });
    expect(team.status).toBe(200);
    state.team = team.body.id;
    expect((await call(auth, `/organization/list-teams?organizationId=${state.org}`, { headers: state.headers })).status).toBe(200);
  });

  it('identity error answers: 401, 409, 422', async () => {
    expect((await call(auth, '/sign-in/email', { method: 'POST', json: { email: 'proxy-one@example.com', password: 'wrong password here' } })).status).toBe(401);
    expect((await call(auth, '/organization/create', { method: 'POST', headers: state.headers, json: { name: 'Again', slug: 'proxy-org' } })).status).toBe(409);
    expect((await call(auth, '/sign-up/email', { method: 'POST', json: { name: 'Again', email: 'PROXY-ONE@example.com', password: 'correct horse battery staple' } })).status).toBe(422);
  });

  it('public and signed-in reads', async () => {
    expect((await call(v1, '/health')).status).toBe(200);
    expect((await call(v1, '/auth-config')).status).toBe(200);
    const me = await call(v1, '/me', { headers: state.headers });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe('proxy-one@example.com');
    // The contract's second scheme: the session cookie (a read, so no Origin needed).
    const byCookie = await call(v1, '/me', { headers: { cookie: state.cookie } });
    expect(byCookie.status).toBe(200);
    expect(byCookie.body.email).toBe('proxy-one@example.com');
  });

  it('workspaces: create, list, get, update', async () => {
    const created = await call(v1, '/workspaces', { method: 'POST', headers: state.headers, json: { organizationId: state.org, teamId: state.team, name: 'Proxy', slug: 'proxy' } });
    expect(created.status).toBe(200);
    state.workspace = created.body.id;
    expect((await call(v1, `/workspaces?organizationId=${state.org}`, { headers: state.headers })).status).toBe(200);
    expect((await call(v1, `/workspaces/proxy?organizationId=${state.org}`, { headers: state.headers })).status).toBe(200);
    const updated = await call(v1, `/workspaces/${state.workspace}`, { method: 'PATCH', headers: state.headers, json: { name: 'Proxy renamed' } });
    expect(updated.status).toBe(200);
    expect(updated.body.name).toBe('Proxy renamed');
  });

  it('documents: createUpload, PUT, complete, list, get, downloadUrl, download, delete', async () => {
    const started = await call(v1, '/documents', {
      method: 'POST',
      headers: state.headers,
      json: { organizationId: state.org, workspaceId: state.workspace, name: 'report.pdf', contentType: 'application/pdf', size: bytes.byteLength },
    });
    expect(started.status).toBe(200);
    state.document = started.body.document.id;
    // 412 while pending: the contract allows the call, the server refuses it.
    expect((await call(v1, `/documents/${state.document}/download-url`, { headers: state.headers })).status).toBe(412);
    expect((await call(v1, `/documents/${state.document}/complete`, { method: 'POST', headers: state.headers })).status).toBe(412);

    // The upload address is the server's own (not an operation of the contract): straight there.
    const put = await fetch(started.body.upload.url, { method: started.body.upload.method, headers: started.body.upload.headers, body: bytes });
    expect(put.status).toBeLessThan(300);

    const completed = await call(v1, `/documents/${state.document}/complete`, { method: 'POST', headers: state.headers });
    expect(completed.status).toBe(200);
    expect(completed.body).toMatchObject({ status: 'ready', size: bytes.byteLength });
    const listed = await call(v1, `/workspaces/${state.workspace}/documents?organizationId=${state.org}&limit=10`, { headers: state.headers });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((d: { id: string }) => d.id)).toEqual([state.document]);
    expect((await call(v1, `/documents/${state.document}`, { headers: state.headers })).status).toBe(200);
    expect((await call(v1, `/documents/${state.document}/text`, { headers: state.headers })).status).toBe(200);
    const link = await call(v1, `/documents/${state.document}/download-url`, { headers: state.headers });
    expect(link.status).toBe(200);
    const downloaded = await fetch(link.body.url);
    expect(Buffer.from(await downloaded.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
  });

  it('error answers the contract allows and the server gives: 400, 401, 403, 404, 409', async () => {
    // 400: a cursor the service did not issue (any string fits the schema).
    const badCursor = await call(v1, `/workspaces/${state.workspace}/documents?organizationId=${state.org}&cursor=not-issued`, { headers: state.headers });
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.code).toBe('BAD_REQUEST');
    // 401: credentials present (so Prism forwards) but no such session.
    const stranger = await call(v1, '/me', { headers: { authorization: 'Bearer aaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' } });
    expect(stranger.status).toBe(401);
    expect(stranger.body.code).toBe('UNAUTHORIZED');
    // 403: a signed-in user outside the organization, by tenant argument and by row.
    const outsiderList = await call(v1, `/workspaces?organizationId=${state.org}`, { headers: state.otherHeaders });
    expect(outsiderList.status).toBe(403);
    const outsiderRow = await call(v1, `/documents/${state.document}`, { headers: state.otherHeaders });
    expect(outsiderRow.status).toBe(403);
    expect(outsiderRow.body.code).toBe('FORBIDDEN');
    // 404: a well-formed id of no row; a workspace of another organization.
    const missing = await call(v1, '/documents/doc_aaaaaaaaaaaaaaaaaaaaaaaa', { headers: state.headers });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('NOT_FOUND');
    const foreignWorkspace = await call(v1, '/documents', {
      method: 'POST',
      headers: state.otherHeaders,
      json: { organizationId: state.otherOrg, workspaceId: state.workspace, name: 'x.pdf', contentType: 'application/pdf', size: 1 },
    });
    expect(foreignWorkspace.status).toBe(404);
    // 404: a team of another organization.
    const foreignTeam = await call(v1, '/workspaces', { method: 'POST', headers: state.otherHeaders, json: { organizationId: state.otherOrg, teamId: state.team, name: 'X', slug: 'x-ws' } });
    expect(foreignTeam.status).toBe(404);
    // 409: a slug taken in the organization.
    const taken = await call(v1, '/workspaces', { method: 'POST', headers: state.headers, json: { organizationId: state.org, name: 'Again', slug: 'proxy' } });
    expect(taken.status).toBe(409);
    expect(taken.body.code).toBe('CONFLICT');
  });

  it("organizations.usage and billing.status: the server's answers pass the proxy unchanged", async () => {
    // Every procedure is built, so none answers 501 (Prism proxy would re-mock an upstream 501).
    const usage = await call(v1, `/organizations/${state.org}/usage`, { headers: state.headers });
    expect(usage.status).toBe(200);
    expect(usage.body).toMatchObject({ plan: null, limits: null, usage: { workspaces: 1 } });
    const billing = await call(v1, `/organizations/${state.org}/billing`, { headers: state.headers });
    expect(billing.body).toEqual({ enabled: false, plan: null, limits: null, subscription: null, paymentFailed: false, overLimit: [] });
  });

  it('deletes the document and the workspace', async () => {
    const deleted = await call(v1, `/documents/${state.document}`, { method: 'DELETE', headers: state.headers });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: state.document });
    expect((await call(v1, `/documents/${state.document}`, { headers: state.headers })).status).toBe(404);
    expect((await call(v1, `/workspaces/${state.workspace}`, { method: 'DELETE', headers: state.headers })).status).toBe(200);
  });

  it('Prism validated every answer above (none came from Prism itself)', () => {
    // A 422 or a 500 from Prism itself would mean it refused a request or replaced an answer.
    expect(seen.filter((call) => call.fromPrism).map((call) => call.where)).toEqual([]);
    expect(seen.length).toBeGreaterThan(30);
  });
});

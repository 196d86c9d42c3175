/**
 * A second third-party flow, next to the hey-api one: openapi-typescript generates types from the
 * documents the server serves (/api/v1/openapi.json and /api/auth/openapi.json), a small client
 * module written only against those types with openapi-fetch is type-checked under strict tsc,
 * and then runs a whole document flow against the real server: sign up, create an organization,
 * a workspace, upload a document (createUpload, PUT the bytes, complete), list it, download the
 * same bytes, delete it. Every answer is also checked against the contract.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertMatchesContract } from '../support/contract-check.ts';
import { COMPILERS, strictTypeCheck } from '../support/compilers.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
// Inside the repository (ignored by git) so the module resolves openapi-fetch like project code.
const dir = join(root, '.tmp', `openapi-fetch-${process.pid}`);

/**
 * The client module a partner would write: typed code only (no casts, no `any`), against the
 * types generated from the served documents. Whatever it cannot express is a contract bug.
 */
const clientModule = `
import createClient from 'openapi-fetch';
import type { paths } from './v1.ts';
import type { paths as authPaths } from './auth.ts';

export interface FlowOptions {
  /** The served v1 document's first server. */
  baseUrl: string;
  /** The served identity document's first server. */
  authBaseUrl: string;
  email: string;
  bytes: Uint8Array<ArrayBuffer>;
  fetch?: (request: Request) => Promise<Response>;
}

function must<T>(value: T | undefined, what: string, response: Response): T {
  if (value === undefined) throw new Error(\`\${what} answered \${response.status}\`);
  return value;
}

export async function flow(options: FlowOptions) {
  const transport = options.fetch ? { fetch: options.fetch } : {};
  const auth = createClient<authPaths>({ baseUrl: options.authBaseUrl, ...transport });

  const signedUp = await auth.POST('/sign-up/email', { body: { name: 'Partner', email: options.email, password: 'correct horse battery staple' } });
  const token = must(signedUp.data, 'auth.signUpEmail', signedUp.response).token;
  if (token === null) throw new Error('sign-up did not sign in');
  const headers = { authorization: \`Bearer \${token}\` };

  const slug = 'partner-' + Date.now().toString(36);
  const created = await auth.POST('/organization/create', { body: { name: 'Partner Org', slug }, headers });
  const organizationId = must(created.data, 'auth.organization.create', created.response).id;

  const api = createClient<paths>({ baseUrl: options.baseUrl, headers, ...transport });

  const me = await api.GET('/me');
  const userId: string = must(me.data, 'user.me', me.response).id;

  const ws = await api.POST('/workspaces', { body: { organizationId, name: 'Partner workspace', slug: 'partner-ws' } });
  const workspace = must(ws.data, 'workspaces.create', ws.response);

  const started = await api.POST('/documents', {
    body: { organizationId, workspaceId: workspace.id, name: 'report.pdf', contentType: 'application/pdf', size: options.bytes.byteLength },
  });
  const { document, upload } = must(started.data, 'documents.createUpload', started.response);
  const put = await fetch(upload.url, { method: upload.method, headers: upload.headers, body: options.bytes });
  if (!put.ok) throw new Error(\`upload PUT answered \${put.status}: \${await put.text()}\`);

  const completed = await api.POST('/documents/{id}/complete', { params: { path: { id: document.id } } });
  const ready = must(completed.data, 'documents.complete', completed.response);

  const listed = await api.GET('/workspaces/{workspaceId}/documents', { params: { path: { workspaceId: workspace.id }, query: { organizationId, limit: 10 } } });
  const page = must(listed.data, 'documents.list', listed.response);

  const link = await api.GET('/documents/{id}/download-url', { params: { path: { id: document.id } } });
  const download = must(link.data, 'documents.downloadUrl', link.response);
  const fetched = await fetch(download.url);
  const downloaded = new Uint8Array(await fetched.arrayBuffer());

  const removed = await api.DELETE('/documents/{id}', { params: { path: { id: document.id } } });
  const deletedId: string = must(removed.data, 'documents.delete', removed.response).id;

  const gone = await api.GET('/documents/{id}', { params: { path: { id: document.id } } });
  // Procedure errors are { defined, code, status, message }; the HTTP layer's 413 (TransportErrorBody,
  // docs/errors.md) is { error, message, requestId }: the union the types give has to be narrowed.
  const goneError = gone.error === undefined ? null : 'code' in gone.error ? { status: gone.error.status, code: gone.error.code, defined: gone.error.defined } : { status: gone.response.status, code: gone.error.error, defined: false };

  return {
    organizationId,
    userId,
    workspace: { id: workspace.id, slug: workspace.slug, organizationId: workspace.organizationId },
    pending: { status: document.status, size: document.size, uploadedBy: document.uploadedBy },
    ready: { status: ready.status, size: ready.size },
    listed: { ids: page.items.map((item) => item.id), usedBytes: page.storage.usedBytes, nextCursor: page.nextCursor },
    download: { status: fetched.status, contentType: fetched.headers.get('content-type'), bytes: downloaded, expiresAt: download.expiresAt },
    deletedId,
    goneError,
  };
}
`;

/** Contract gaps that strict tsc reports in the generated types, each matched exactly (none today). */
const KNOWN_TYPE_ERRORS: RegExp[] = [];

let server: TestServer;
let v1Document: { servers: { url: string }[] };
let authDocument: { servers: { url: string }[] };

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  await mkdir(dir, { recursive: true });
  const v1Text = await (await fetch(`${server.origin}/api/v1/openapi.json`)).text();
  const authText = await (await fetch(`${server.origin}/api/auth/openapi.json`)).text();
  v1Document = JSON.parse(v1Text);
  authDocument = JSON.parse(authText);
  await writeFile(join(dir, 'v1.json'), v1Text);
  await writeFile(join(dir, 'auth.json'), authText);
  // openapi-typescript's Node API, on the served bytes (the CLI does the same from a file).
  await writeFile(join(dir, 'v1.ts'), astToString(await openapiTS(JSON.parse(v1Text))));
  await writeFile(join(dir, 'auth.ts'), astToString(await openapiTS(JSON.parse(authText))));
  await writeFile(join(dir, 'flow.ts'), clientModule);
}, 120_000);
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('openapi-typescript + openapi-fetch from the served documents', () => {
  it.each(COMPILERS)(
    'the client module type-checks under strict %s',
    async (_name, tsc) => {
      const options = ['--exactOptionalPropertyTypes', '--noUncheckedIndexedAccess', '--allowImportingTsExtensions', '--types', 'node'];
      const { stdout } = await strictTypeCheck(tsc, [join(dir, 'flow.ts')], options).catch((error: { stdout: string }) => error);
      const diagnostics = stdout
        .split('\n')
        .filter((line) => /error TS\d+/.test(line))
        .map((line) => line.replace(dir + '/', '').replace(/^\.tmp\/openapi-fetch-\d+\//, ''));
      const known = diagnostics.filter((line) => KNOWN_TYPE_ERRORS.some((pattern) => pattern.test(line)));
      // Anything else is a contract gap (or a mistake in the module above): none is allowed.
      expect(diagnostics.filter((line) => !known.includes(line))).toEqual([]);
      // The known ones still happen; once the contract is fixed, delete them from KNOWN_TYPE_ERRORS.
      expect(KNOWN_TYPE_ERRORS.filter((pattern) => !known.some((line) => pattern.test(line)))).toEqual([]);
    },
    120_000,
  );

  it('runs the document flow against the real server with servers[0] as base URL', async () => {
    expect(v1Document.servers[0]!.url).toBe(`${server.origin}/api/v1`);
    expect(authDocument.servers[0]!.url).toBe(`${server.origin}/api/auth`);
    const { flow } = await import(join(dir, 'flow.ts'));
    const checked: string[] = [];
    // The client's own fetch, with every answer checked against the contract on the way.
    const checkingFetch = async (request: Request) => {
      const response = await fetch(request);
      const text = await response.clone().text();
      const contentType = response.headers.get('content-type');
      assertMatchesContract(request.method, new URL(request.url), response.status, contentType, text && contentType?.includes('json') ? JSON.parse(text) : undefined);
      checked.push(`${request.method} ${new URL(request.url).pathname} ${response.status}`);
      return response;
    };
    const bytes = new TextEncoder().encode('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
    const result = await flow({ baseUrl: v1Document.servers[0]!.url, authBaseUrl: authDocument.servers[0]!.url, email: 'partner@example.com', bytes, fetch: checkingFetch });

    expect(result.workspace).toMatchObject({ slug: 'partner-ws', organizationId: result.organizationId });
    expect(result.pending).toEqual({ status: 'pending', size: bytes.byteLength, uploadedBy: result.userId });
    expect(result.ready).toEqual({ status: 'ready', size: bytes.byteLength });
    expect(result.listed).toEqual({ ids: [result.deletedId], usedBytes: bytes.byteLength, nextCursor: null });
    expect(result.download.status).toBe(200);
    expect(result.download.contentType).toBe('application/pdf');
    expect(Buffer.from(result.download.bytes).equals(Buffer.from(bytes))).toBe(true);
    expect(Date.parse(result.download.expiresAt)).toBeGreaterThan(Date.now());
    expect(result.goneError).toEqual({ status: 404, code: 'NOT_FOUND', defined: true });
    expect(checked).toHaveLength(10);
  }, 60_000);
});

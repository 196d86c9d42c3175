/**
 * The two reference pages, /api/v1/reference (the procedures) and /api/auth/reference (the
 * identity routes), one module (src/http/reference-page.ts): their headers and addresses over
 * plain HTTP, then each in a real browser: headless Chromium (Debian's `chromium` package, `make
 * browser`) loads the page, Swagger UI (served from swagger-ui-dist) fetches the contract and
 * renders it, and the rendered DOM is checked. The browser part is skipped, saying why, without
 * /usr/bin/chromium.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFERENCE_PAGE_CSP } from '../../src/http/reference-page.ts';
import { CONTENT_SECURITY_POLICY } from '../../src/http/security-headers.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`test/http/reference-page.test.ts: the browser checks are skipped, ${CHROMIUM} is missing (make browser, or apt-get install -y chromium)`);

const pages = [
  { path: '/api/v1/reference', document: '/api/v1/openapi.json', title: 'Workspace API: reference', heading: 'Workspace API' },
  { path: '/api/auth/reference', document: '/api/auth/openapi.json', title: 'Workspace API identity routes: reference', heading: 'Workspace API identity routes' },
];

interface Operation {
  operationId: string;
  tags?: string[];
  requestBody?: unknown;
}
interface ContractDocument {
  info: { title: string };
  tags?: { name: string }[];
  paths: Record<string, Record<string, unknown>>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const operationsOf = (document: ContractDocument): Operation[] =>
  Object.values(document.paths).flatMap((item) =>
    Object.entries(item)
      .filter(([key]) => METHODS.includes(key))
      .map(([, operation]) => operation as Operation),
  );

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

// Plain fetch throughout: server.fetch reads every answer as JSON.
describe.each(pages)('$path over HTTP', (page) => {
  it('is an HTML page with its own strict Content-Security-Policy; the contract document keeps the API one', async () => {
    for (const path of [page.path, `${page.path}/`]) {
      const response = await fetch(`${server.origin}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(response.headers.get('content-security-policy')).toBe(REFERENCE_PAGE_CSP);
      const html = await response.text();
      expect(html).toContain(`<title>${page.title}</title>`);
    }
    expect(REFERENCE_PAGE_CSP).toMatch(/(^|; )script-src 'self'(;|$)/);
    expect(REFERENCE_PAGE_CSP).toMatch(/(^|; )style-src 'self'(;|$)/);
    const document = await fetch(`${server.origin}${page.document}`);
    expect(document.status).toBe(200);
    expect(document.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
  });

  it('loads only its own addresses, each served here (no CDN)', async () => {
    const html = await (await fetch(`${server.origin}${page.path}`)).text();
    const addresses = [...html.matchAll(/(?:src|href)="([^"]*)"/g)].map((match) => match[1]!);
    expect(addresses).toEqual([`${page.path}/assets/swagger-ui.css`, `${page.path}/assets/swagger-ui-bundle.js`, `${page.path}/init.js`]);
    const types = await Promise.all(
      addresses.map(async (address) => {
        const response = await fetch(`${server.origin}${address}`);
        await response.arrayBuffer();
        return [response.status, response.headers.get('content-type')?.split(';')[0]];
      }),
    );
    expect(types).toEqual([
      [200, 'text/css'],
      [200, 'text/javascript'],
      [200, 'text/javascript'],
    ]);
    // The settings name the contract this page renders.
    expect(await (await fetch(`${server.origin}${page.path}/init.js`)).text()).toContain(`"url":"${page.document}"`);
  });

  it('answers 404 NOT_FOUND for an asset swagger-ui-dist does not have', async () => {
    const response = await fetch(`${server.origin}${page.path}/assets/nope.js`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ defined: false, code: 'NOT_FOUND' });
  });
});

describe.skipIf(!hasChromium)('the reference pages in headless Chromium', () => {
  let profile: string;
  beforeAll(async () => {
    profile = await mkdtemp(join(tmpdir(), 'workspace-api-chromium-'));
  });
  afterAll(() => rm(profile, { recursive: true, force: true }));

  /** The DOM once the page's scripts and fetches ran (10 s of virtual time), and the console (CSP refusals are reported there). */
  async function render(url: string): Promise<{ dom: string; console: string }> {
    const { stdout, stderr } = await promisify(execFile)(
      CHROMIUM,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        `--user-data-dir=${profile}`,
        '--enable-logging=stderr',
        '--v=0',
        '--dump-dom',
        '--virtual-time-budget=10000',
        url,
      ],
      { timeout: 45_000, maxBuffer: 32 * 1024 * 1024 },
    );
    return {
      dom: stdout,
      console: stderr
        .split('\n')
        .filter((line) => line.includes('CONSOLE'))
        .join('\n'),
    };
  }

  it.each(pages)(
    '$path renders every group and every operation of its contract',
    async (page) => {
      const document = (await (await fetch(`${server.origin}${page.document}`)).json()) as ContractDocument;
      const { dom, console } = await render(`${server.origin}${page.path}`);
      // Short facts drawn from the DOM, so a failure shows them rather than the whole page.
      const rendered = {
        title: /<title>([^<]*)<\/title>/.exec(dom)?.[1],
        heading: /<h1 class="title">([^<]*)/.exec(dom)?.[1],
        groups: [...dom.matchAll(/<h3 class="opblock-tag[^"]*"[^>]* data-tag="([^"]*)"/g)].map((match) => match[1]),
        operations: [...dom.matchAll(/class="opblock-summary-path" data-path="([^"]*)"/g)].map((match) => match[1]),
      };
      expect(rendered.title).toBe(page.title);
      expect(rendered.heading).toBe(page.heading);
      const operations = operationsOf(document);
      const groups = [...new Set(operations.flatMap((operation) => operation.tags ?? ['default']))];
      expect([...rendered.groups].sort()).toEqual([...groups].sort());
      expect(rendered.operations).toHaveLength(operations.length);
      expect(rendered.operations).toEqual(expect.arrayContaining(Object.keys(document.paths)));
      // Nothing the page needs was refused by its Content-Security-Policy, nor failed to load.
      expect(console).not.toMatch(/Content Security Policy|Refused to|Failed to load/i);
    },
    60_000,
  );

  it('/api/v1/reference opens an operation from its address, showing its request and answer schemas', async () => {
    const document = (await (await fetch(`${server.origin}/api/v1/openapi.json`)).json()) as ContractDocument & { components: { schemas: Record<string, { properties: object }> } };
    const { dom } = await render(`${server.origin}/api/v1/reference#/workspaces/workspaces.create`);
    const opened = [...dom.matchAll(/<div class="opblock opblock-(\w+) is-open" id="([^"]*)"/g)];
    // Swagger UI escapes the operation id for CSS in the element's id.
    expect(opened.map((match) => [match[1], match[2]])).toEqual([['post', 'operations-workspaces-workspaces\\.create']]);
    const start = opened[0]!.index;
    const next = dom.indexOf('<div class="opblock opblock-', start + 1);
    const block = dom.slice(start, next < 0 ? undefined : next);
    // The request body is shown as its schema, and so are the answers: model titles and property names.
    expect(block).toContain('opblock-section-request-body');
    const titles = new Set([...block.matchAll(/class="json-schema-2020-12__title"[^>]*>([^<]+)</g)].map((match) => match[1]!.trim()));
    const statuses = [...block.matchAll(/class="response-col_status"[^>]*>(\d{3})</g)].map((match) => match[1]);
    const expected = ['WorkspacesCreateInput', 'Workspace'].flatMap((name) => [name, ...Object.keys(document.components.schemas[name]!.properties)]);
    expect([...titles]).toEqual(expect.arrayContaining(expected));
    expect(statuses).toEqual(expect.arrayContaining(['200', '400', '401', '409']));
  }, 60_000);
});

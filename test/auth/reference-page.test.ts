/**
 * /api/auth/reference in a real browser: headless Chromium (Debian's `chromium` package) loads
 * the page, Swagger UI (served from swagger-ui-dist) fetches /api/auth/openapi.json and renders
 * the operations, and the rendered DOM is checked. Skipped, saying why, without /usr/bin/chromium.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`test/auth/reference-page.test.ts: skipped, ${CHROMIUM} is missing (apt-get install -y chromium)`);

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe('/api/auth/reference headers', () => {
  it('the page has no Content-Security-Policy; the contract document keeps it', async () => {
    // Plain fetch: server.fetch reads every answer as JSON.
    const page = await fetch(`${server.origin}/api/auth/reference/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toBeNull();
    const document = await fetch(`${server.origin}/api/auth/openapi.json`);
    expect(document.status).toBe(200);
    expect(document.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
  });
});

describe.skipIf(!hasChromium)('/api/auth/reference in headless Chromium', () => {
  let profile: string;
  beforeAll(async () => {
    profile = await mkdtemp(join(tmpdir(), 'workspace-api-chromium-'));
  });
  afterAll(() => rm(profile, { recursive: true, force: true }));

  it('renders the identity contract: title and operations', async () => {
    const { stdout } = await promisify(execFile)(CHROMIUM, [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', `--user-data-dir=${profile}`,
      // Run the page's scripts and fetches for up to 10 s of virtual time, then print the DOM.
      '--dump-dom', '--virtual-time-budget=10000', `${server.origin}/api/auth/reference/`,
    ], { timeout: 45_000, maxBuffer: 32 * 1024 * 1024 });
    // Short facts drawn from the DOM, so a failure shows them rather than the whole page.
    const rendered = {
      title: /<title>([^<]*)<\/title>/.exec(stdout)?.[1],
      heading: /<h1 class="title">([^<]*)/.exec(stdout)?.[1],
      paths: [...stdout.matchAll(/class="opblock-summary-path" data-path="([^"]*)"/g)].map((match) => match[1]),
    };
    expect(rendered.title).toBe('Workspace API identity routes: reference');
    expect(rendered.heading).toBe('Workspace API identity routes');
    expect(rendered.paths).toEqual(expect.arrayContaining(['/sign-in/email', '/organization/create', '/admin/list-users', '/callback/{provider}']));
    // One block per operation of the identity contract.
    const document = (await (await fetch(`${server.origin}/api/auth/openapi.json`)).json()) as { paths: Record<string, object> };
    const operations = Object.values(document.paths).flatMap((item) => Object.keys(item).filter((key) => ['get', 'post'].includes(key)));
    expect(rendered.paths).toHaveLength(operations.length);
  }, 60_000);
});

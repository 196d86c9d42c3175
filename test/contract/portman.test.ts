/**
 * Third-party contract tests: Portman (@apideck/portman) generates a Postman collection from the
 * document the server serves, with contract tests on every operation (status, Content-Type, a JSON
 * body, the body against the response schema, the declared response headers) and variations
 * (missing credentials -> 401 on every non-public operation, a few invalid inputs -> 400).
 * newman runs that one collection against the real server and against the Prism mock, and every
 * assertion must pass on both. The configuration is test/contract/portman-config.json.
 *
 * Two operations are checked on a declared error instead of their success, so the run changes
 * nothing it needs later: admin.organizations.cancelSubscription answers 412 (the server runs
 * without billing) and admin.organizations.delete 404 (a confirmSlug that differs). Their requests
 * carry `Prefer: code=<status>`, which makes the mock answer that same declared response (the
 * server ignores it).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import newman, { type NewmanRunSummary } from 'newman';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import document from '../../generated/openapi.json' with { type: 'json' };
import { startPrism, type PrismProcess } from '../support/prism.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import type { TestUser } from '../support/users.ts';
import { seedExamples } from '../support/example-rows.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const config = fileURLToPath(new URL('./portman-config.json', import.meta.url));

interface Item {
  name: string;
  item?: Item[];
  request?: { method: string; url: { path?: string[] } };
  protocolProfileBehavior?: Record<string, unknown>;
}
interface Collection {
  item: Item[];
}

let server: TestServer;
let prism: PrismProcess;
let user: TestUser;
let dir: string;
let collection: Collection;

/**
 * Portman groups requests in one folder per tag; the run needs one order across them (an upload is
 * PUT between documents.createUpload and documents.complete), so the folders are flattened and the
 * requests put in the configuration's `orderOfOperations` (the rest keep their place, after them).
 * Cookies are off: the client signs in with its bearer token only, so a session cookie an answer
 * sets (the mock answers the contract's example Set-Cookie) never signs in a later request, such
 * as a missing-credentials variation.
 */
function flatten(generated: Collection, order: string[]): Collection {
  const requests: Item[] = [];
  const walk = (items: Item[]) => {
    for (const item of items) {
      if (item.item) walk(item.item);
      else requests.push(item);
    }
  };
  walk(generated.item);
  const key = (item: Item) => `[${item.request!.method}]::/${(item.request!.url.path ?? []).map((segment) => segment.replace(/^:(.*)$/, '{$1}')).join('/')}`;
  const rank = (item: Item) => {
    const index = order.indexOf(key(item));
    return index === -1 ? order.length : index;
  };
  // Variations (Portman names them "<operation>[<variation>]") run after the contract tests.
  const variation = (item: Item) => (/\[.*\]$/.test(item.name) ? 1 : 0);
  const sorted = requests.map((item, index) => ({ item, index })).sort((a, b) => variation(a.item) - variation(b.item) || rank(a.item) - rank(b.item) || a.index - b.index);
  return { ...generated, item: sorted.map(({ item }) => ({ ...item, protocolProfileBehavior: { ...item.protocolProfileBehavior, disableCookies: true } })) };
}

function run(baseUrl: string, origin: string): Promise<NewmanRunSummary> {
  return new Promise((resolve, reject) => {
    newman.run(
      {
        collection,
        envVar: [
          { key: 'baseUrl', value: baseUrl },
          { key: 'origin', value: origin },
          { key: 'bearerToken', value: user.token },
        ],
        reporters: [],
        timeoutRequest: 10_000,
      },
      (error, summary) => (error ? reject(error) : resolve(summary)),
    );
  });
}

/** Every failed assertion or request error, and every request that ran no assertion at all. */
function failures(summary: NewmanRunSummary): string[] {
  const unchecked = summary.run.executions.filter((execution) => !execution.assertions?.length).map((execution) => `${execution.item.name}: no assertion ran`);
  return [...unchecked, ...summary.run.failures.map((failure) => `${(failure.source as { name?: string } | undefined)?.name ?? '?'}: ${failure.error.message}`)];
}

beforeAll(async () => {
  // CONTACT_EMAIL: contact.send delivers (to the log) instead of answering 412 not configured.
  // WORKER=off: the job jobs.create queues stays queued, so jobs.cancel can cancel it. A stream
  // lives half a second, so newman gets the whole jobs.stream answer (it ends with `end expired`).
  server = await startTestServer({
    env: { RATE_LIMIT_PER_MINUTE: '100000', CONTACT_EMAIL: 'operators@example.com', WORKER: 'off' },
    overrides: { streamTiming: { lifetimeMs: 500 } },
  });
  // A platform admin too, so the admin.* procedures get past their access check to the 501 they declare.
  user = await seedExamples(server, { role: 'admin' });
  dir = await mkdtemp(join(tmpdir(), 'portman-'));
  prism = await startPrism();
  // The document as a partner gets it: fetched from the running server.
  await writeFile(join(dir, 'openapi.json'), await (await fetch(`${server.origin}/api/v1/openapi.json`)).text());
  // Portman writes its working files under ./tmp: run it in the temporary directory.
  await promisify(execFile)(
    join(root, 'node_modules/.bin/node'),
    [join(root, 'node_modules/@apideck/portman/bin/portman'), '--local', 'openapi.json', '--portmanConfigFile', config, '--output', 'collection.json', '--runNewman', 'false'],
    { cwd: dir },
  );
  const order = (JSON.parse(await readFile(config, 'utf8')) as { globals: { orderOfOperations: string[] } }).globals.orderOfOperations;
  collection = flatten(JSON.parse(await readFile(join(dir, 'collection.json'), 'utf8')) as Collection, order);
}, 90_000);
afterAll(async () => {
  await prism?.close();
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('Portman contract tests generated from the served document', () => {
  it('cover every operation of the document', () => {
    const operations = Object.values(document.paths).flatMap((path) => Object.keys(path).filter((method) => ['get', 'post', 'put', 'patch', 'delete', 'head'].includes(method)));
    const contract = collection.item.filter((item) => !/\[.*\]$/.test(item.name));
    expect(contract).toHaveLength(operations.length);
    // The missing-credentials variation on every operation that is not public.
    const guarded = Object.values(document.paths).flatMap((path) =>
      Object.values(path as Record<string, { 'x-access'?: unknown }>).filter((operation) => typeof operation === 'object' && 'x-access' in operation && operation['x-access'] !== 'public'),
    );
    expect(collection.item.filter((item) => item.name.endsWith('[missing credentials]'))).toHaveLength(guarded.length);
  });

  it('pass against the real server', async () => {
    const summary = await run(`${server.origin}/api/v1`, server.origin);
    expect(failures(summary)).toEqual([]);
    expect(summary.run.stats.requests.total).toBe(collection.item.length);
    expect(summary.run.stats.assertions.total).toBeGreaterThan(300);
  }, 60_000);

  it('pass against the Prism mock', async () => {
    const summary = await run(prism.origin, prism.origin);
    expect(failures(summary)).toEqual([]);
    expect(summary.run.stats.requests.total).toBe(collection.item.length);
    expect(summary.run.stats.assertions.total).toBeGreaterThan(300);
  }, 60_000);
});

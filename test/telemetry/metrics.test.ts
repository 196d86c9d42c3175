/**
 * GET /metrics: Prometheus text that parses, counters and histograms per procedure name (never
 * the raw path) that move with calls, queue gauges read from the database at scrape time, the
 * version's info series, the bearer token when one is set, and no per-IP limit on scrapes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import document from '../../generated/openapi.json' with { type: 'json' };
import { newId } from '../../src/ids.ts';
import { version } from '../../src/version.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The text exposition format 0.0.4: `# HELP`/`# TYPE` comments, then `name{label="value",...} number` lines. */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of match[2]?.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g) ?? []) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

let server: TestServer;
let user: TestUser;
let org: string;
beforeAll(async () => {
  // A tiny per-IP budget: scrapes must not be counted against it. WORKER=off keeps queued jobs queued.
  server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '8', WORKER: 'off' }, aiService: false });
  user = await createUser(server.db);
  org = await addMembership(server.db, user, 'owner');
});
afterAll(() => server.close());

const scrape = async () => {
  const response = await fetch(`${server.origin}/metrics`);
  expect(response.status).toBe(200);
  return parse(await response.text());
};

describe('GET /metrics without METRICS_TOKEN', () => {
  it('answers Prometheus text with the version info series', async () => {
    const response = await fetch(`${server.origin}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).toContain('# TYPE workspace_api_requests_total counter');
    expect(text).toContain('# TYPE workspace_api_request_duration_seconds histogram');
    expect(value(parse(text), 'workspace_api_info', { version })).toBe(1);
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('counts calls per procedure name and status, over REST and RPC, and times them', async () => {
    const before = await scrape();
    const count = (samples: Sample[], procedure: string, status: string) => value(samples, 'workspace_api_requests_total', { procedure, status }) ?? 0;
    const timed = (samples: Sample[], procedure: string, status: string) => value(samples, 'workspace_api_request_duration_seconds_count', { procedure, status }) ?? 0;

    expect((await server.fetch('/api/v1/me', { headers: user.headers })).status).toBe(200);
    expect((await server.fetch('/rpc/user/me', { method: 'POST', headers: user.headers })).status).toBe(200);
    expect((await server.fetch('/api/v1/me')).status).toBe(401);
    const missing = `ws_${'a'.repeat(24)}`;
    expect((await server.fetch(`/api/v1/workspaces/${missing}`, { method: 'DELETE', headers: user.headers })).status).toBe(404);

    const after = await scrape();
    expect(count(after, 'user.me', '200') - count(before, 'user.me', '200')).toBe(2);
    expect(count(after, 'user.me', '401') - count(before, 'user.me', '401')).toBe(1);
    expect(count(after, 'workspaces.delete', '404') - count(before, 'workspaces.delete', '404')).toBe(1);
    expect(timed(after, 'user.me', '200') - timed(before, 'user.me', '200')).toBe(2);
    expect(value(after, 'workspace_api_request_duration_seconds_sum', { procedure: 'user.me', status: '200' })).toBeGreaterThan(0);
    // Labels are names, never paths or ids.
    for (const sample of after.filter((s) => s.labels.procedure !== undefined)) {
      expect(sample.labels.procedure).toMatch(/^[a-zA-Z.]+$/);
    }
    expect(JSON.stringify(after)).not.toContain(missing);
  });

  it('reports the queue from the database at scrape time', async () => {
    const before = await scrape();
    const insert = (status: string) => server.db.sql`
      insert into jobs (id, organization_id, kind, status, input, credits, finished_at)
      values (${newId('job')}, ${org}, 'text.embed', ${status}, ${server.db.sql.json({ texts: ['x'] })}, 1, ${status === 'failed' ? new Date() : null})`;
    await insert('queued');
    await insert('queued');
    await insert('running');
    await insert('failed');
    const after = await scrape();
    expect(value(after, 'workspace_api_queue_depth')! - value(before, 'workspace_api_queue_depth')!).toBe(2);
    expect(value(after, 'workspace_api_queue_running')! - value(before, 'workspace_api_queue_running')!).toBe(1);
    expect(value(after, 'workspace_api_queue_failed')! - value(before, 'workspace_api_queue_failed')!).toBe(1);
    expect(value(after, 'workspace_api_database_up')).toBe(1);
  });

  it('is not limited per IP, not a procedure, and not in the contract', async () => {
    for (let i = 0; i < 12; i++) expect((await fetch(`${server.origin}/metrics`)).status).toBe(200);
    expect(Object.keys(document.paths)).not.toContain('/metrics');
    expect((await fetch(`${server.origin}/api/v1/metrics`)).status).not.toBe(200);
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  let guarded: TestServer;
  beforeAll(async () => {
    guarded = await startTestServer({ env: { METRICS_TOKEN: 'scrape-token-1234' }, aiService: false });
  });
  afterAll(() => guarded.close());

  it.each([
    ['no Authorization', {}],
    ['a wrong token', { authorization: 'Bearer scrape-token-1235' }],
    ['a prefix of the token', { authorization: 'Bearer scrape-token' }],
    ['another scheme', { authorization: 'Basic scrape-token-1234' }],
  ])('answers 401 to %s', async (_case, headers: Record<string, string>) => {
    const response = await fetch(`${guarded.origin}/metrics`, { headers });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    expect(await response.json()).toMatchObject({ error: 'unauthorized' });
  });

  it('answers the metrics to the bearer of the token (the scheme in any case)', async () => {
    for (const scheme of ['Bearer', 'bearer']) {
      const response = await fetch(`${guarded.origin}/metrics`, { headers: { authorization: `${scheme} scrape-token-1234` } });
      expect(response.status).toBe(200);
      expect(value(parse(await response.text()), 'workspace_api_info', { version })).toBe(1);
    }
  });
});

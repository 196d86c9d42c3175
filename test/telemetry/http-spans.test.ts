/**
 * The request's span (issue 41; src/http/request-span.ts), exported over OTLP/HTTP (JSON) to a
 * receiver inside the test: named by the procedure or identity route, never the path; the
 * `traceresponse` header names it; nested spans and log lines of the handler sit under it, through
 * the Express middleware; an untrusted `traceparent` is a link of a new trace, a trusted one is
 * continued; hostile trace headers and paths are answered as without them (never a 500); nothing
 * exported holds a token or a password. And while tracing is off: no header,
 * and no SDK loaded.
 *
 * The app runs in this process (test/support/server.ts), so the SDK is started here, and shut
 * down after the file: vitest's workers run file after file (vitest.config.ts, isolate: false), and
 * the next file must find tracing off.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Handlers } from '../../src/context.ts';
import { procedureHandlers } from '../../src/composition/handlers.ts';
import { inSpan, startTracing, tracingOn, type Tracing } from '../../src/telemetry/tracing.ts';
import { descendantsOf, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, TEST_PASSWORD, type TestUser } from '../support/users.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const SERVER = 2; // SpanKind.SERVER in OTLP's numbering (SPAN_KIND_SERVER)
const ERROR = 2; // STATUS_CODE_ERROR

// system.health with a span of its own and a log line inside, after an await: both must find the
// request's span active. system.authConfig fails as a bug would (a 500).
const handlers = {
  'system.health': async (_input: unknown, ctx: { log: { info(message: string): void } }) => {
    await new Promise((resolve) => setImmediate(resolve));
    return inSpan('test.nested', {}, async () => {
      ctx.log.info('inside the handler');
      return procedureHandlers['system.health']();
    });
  },
  'system.authConfig': () => {
    throw new Error('a bug');
  },
} as unknown as Partial<Handlers>;

/** `00-<trace>-<span>-<flags>` */
function parseTraceResponse(value: string | null): { traceId: string; spanId: string; flags: string } {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value ?? '');
  if (!match) throw new Error(`not a traceresponse: ${value}`);
  return { traceId: match[1]!, spanId: match[2]!, flags: match[3]! };
}

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ overrides: { handlers } });
});

afterAll(async () => {
  await server?.close();
});

describe('tracing off (no exporter configured)', () => {
  it('answers without traceresponse, and logs without trace ids', async () => {
    expect(tracingOn()).toBe(false);
    const response = await server.fetch('/api/v1/health');
    expect(response.status).toBe(200);
    expect(response.headers.get('traceresponse')).toBeNull();
    const requestId = response.headers.get('x-request-id');
    const lines = server.logs.filter((line) => line.requestId === requestId);
    expect(lines.map((line) => line.msg)).toContain('inside the handler');
    for (const line of lines) expect(line).not.toHaveProperty('trace_id');
  });

  it('loads no part of the OpenTelemetry SDK (a process of its own, which records what it resolves)', async () => {
    // The service's modules as `serve` loads them, then startTracing with nothing configured;
    // then, as the check's own check, with an exporter configured.
    const script = `
      import { registerHooks } from 'node:module';
      const resolved = [];
      registerHooks({ resolve(specifier, context, next) { const result = next(specifier, context); resolved.push(result.url); return result; } });
      const { startTracing, tracingOn } = await import('./src/telemetry/tracing.ts');
      await import('./src/composition/commands.ts');
      await import('./src/composition/compose.ts');
      await import('./src/http/app.ts');
      const sdk = () => resolved.filter((url) => /@opentelemetry\\/(sdk-|exporter-|context-async-hooks)/.test(url)).length;
      const off = { started: (await startTracing('workspace-api', {})) !== null, on: tracingOn(), sdk: sdk(), api: resolved.some((url) => url.includes('@opentelemetry/api')) };
      const tracing = await startTracing('workspace-api', { OTEL_TRACES_EXPORTER: 'console' });
      const on = { started: tracing !== null, on: tracingOn(), sdk: sdk() };
      await tracing.shutdown();
      console.log(JSON.stringify({ off, on }));
    `;
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: root, env: { ...env, OTEL_TRACES_EXPORTER: 'none' } });
    const { off, on } = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(off).toEqual({ started: false, on: false, sdk: 0, api: true });
    expect(on.started).toBe(true);
    expect(on.on).toBe(true);
    expect(on.sdk).toBeGreaterThan(0);
  });
});

describe('tracing on, exporting to a receiver in the test', () => {
  let receiver: OtlpReceiver;
  let tracing: Tracing;
  let trusting: TestServer;
  let user: TestUser;
  let organizationId: string;
  const saved = new Map<string, string | undefined>();

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    // The SDK reads process.env itself; restored after the file.
    for (const name of [...Object.keys(receiver.env), 'OTEL_METRICS_EXPORTER', 'OTEL_LOGS_EXPORTER', 'OTEL_TRACES_EXPORTER', 'OTEL_SDK_DISABLED', 'OTEL_SERVICE_NAME']) saved.set(name, process.env[name]);
    for (const name of ['OTEL_TRACES_EXPORTER', 'OTEL_SDK_DISABLED', 'OTEL_SERVICE_NAME']) delete process.env[name];
    Object.assign(process.env, receiver.env);
    tracing = (await startTracing('workspace-api'))!;
    expect(tracing).not.toBeNull();
    trusting = await startTestServer({ db: server.db, env: { TRACE_TRUST_INCOMING: 'true' } });
    user = await createUser(server.db);
    organizationId = await addMembership(server.db, user, 'owner');
  });

  afterAll(async () => {
    await trusting?.close();
    await tracing?.shutdown();
    await receiver?.close();
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  /** The exported span `traceresponse` names, once it has arrived. */
  async function spanOf(response: Response): Promise<ReceivedSpan> {
    const { traceId, spanId } = parseTraceResponse(response.headers.get('traceresponse'));
    const spans = await receiver.until((received) => received.some((span) => span.spanId === spanId));
    const span = spans.find((candidate) => candidate.spanId === spanId)!;
    expect(span.traceId).toBe(traceId);
    return span;
  }

  it('names each request by its operation, with its route template, status, request id and organization', async () => {
    const list = await server.fetch(`/api/v1/workspaces?organizationId=${organizationId}`, { headers: user.headers });
    expect(list.status).toBe(200);
    const span = await spanOf(list);
    expect(span).toMatchObject({ name: 'workspaces.list', kind: SERVER, service: 'workspace-api', parentSpanId: undefined, links: [] });
    expect(span.attributes).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/api/v1/workspaces',
      'http.response.status_code': 200,
      'app.request.id': list.headers.get('x-request-id'),
      'app.organization.id': organizationId,
    });
    expect(span.status.code ?? 0).not.toBe(ERROR);
    // The session lookup's and the handler's statements (src/db/query-spans.ts) sit under it.
    await receiver.until((received) => descendantsOf(received, span).some((below) => below.name.startsWith('db.')));

    const rpc = await server.fetch('/rpc/workspaces/list', { method: 'POST', headers: { ...user.headers, 'content-type': 'application/json' }, body: JSON.stringify({ json: { organizationId } }) });
    expect(rpc.status).toBe(200);
    expect(await spanOf(rpc)).toMatchObject({ name: 'workspaces.list', attributes: { 'http.route': '/rpc/workspaces/list', 'app.organization.id': organizationId } });

    const created = await server.fetch('/api/auth/organization/create', {
      method: 'POST',
      headers: { ...user.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Traced', slug: `traced-${Date.now()}` }),
    });
    expect(created.status).toBe(200);
    expect(await spanOf(created)).toMatchObject({ name: 'auth.organization.create', attributes: { 'http.route': '/api/auth/organization/create', 'http.request.method': 'POST' } });

    // A by-id path: the template, never the id.
    const missing = await server.fetch('/api/v1/workspaces/ws_doesnotexist00000000000', { headers: user.headers });
    const byId = await spanOf(missing);
    expect(byId.name).not.toContain('ws_');
    expect(String(byId.attributes['http.route'])).not.toContain('ws_');
  });

  it('names what no operation took generically, Express routes by their template, and marks a 5xx as an error', async () => {
    const unknown = await server.fetch('/api/v1/no/such/route/42');
    expect(unknown.status).toBe(404);
    const unmatched = await spanOf(unknown);
    expect(unmatched.name).toBe('http.unmatched');
    expect(unmatched.attributes).not.toHaveProperty('http.route');
    expect(unmatched.attributes['http.response.status_code']).toBe(404);
    expect(unmatched.status.code ?? 0).not.toBe(ERROR);

    const health = await server.fetch('/healthz');
    expect(await spanOf(health)).toMatchObject({ name: 'GET /healthz', attributes: { 'http.route': '/healthz' } });

    const failed = await server.fetch('/api/v1/auth-config');
    expect(failed.status).toBe(500);
    const broken = await spanOf(failed);
    expect(broken).toMatchObject({ name: 'system.authConfig', status: { code: ERROR }, attributes: { 'http.response.status_code': 500, 'error.type': '500' } });
  });

  it("keeps the request's span active through the middleware: the handler's spans and log lines are under it", async () => {
    const response = await server.fetch('/api/v1/health');
    const span = await spanOf(response);
    expect(span.name).toBe('system.health');
    const spans = await receiver.until((received) => received.some((candidate) => candidate.name === 'test.nested' && candidate.traceId === span.traceId));
    const nested = spans.find((candidate) => candidate.name === 'test.nested' && candidate.traceId === span.traceId)!;
    expect(nested.parentSpanId).toBe(span.spanId);

    const lines = server.logs.filter((line) => line.requestId === response.headers.get('x-request-id'));
    const inside = lines.find((line) => line.msg === 'inside the handler');
    expect(inside).toMatchObject({ trace_id: span.traceId, span_id: nested.spanId });
    // The access-log line, written when the response finished, in the request's span.
    expect(lines.find((line) => line.msg === 'request')).toMatchObject({ trace_id: span.traceId, span_id: span.spanId });
  });

  it("keeps an untrusted caller's traceparent as a link of a new trace", async () => {
    const callerTrace = '0af7651916cd43dd8448eb211c80319c';
    const callerSpan = 'b7ad6b7169203331';
    const response = await server.fetch('/api/v1/health', { headers: { traceparent: `00-${callerTrace}-${callerSpan}-01`, tracestate: 'vendor=value' } });
    const span = await spanOf(response);
    expect(span.traceId).not.toBe(callerTrace);
    expect(span.parentSpanId).toBeUndefined();
    expect(span.links).toEqual([{ traceId: callerTrace, spanId: callerSpan }]);

    // A malformed one is no link at all.
    const garbled = await server.fetch('/api/v1/health', { headers: { traceparent: '00-not-a-trace-01' } });
    expect((await spanOf(garbled)).links).toEqual([]);
  });

  it("continues a trusted caller's trace (TRACE_TRUST_INCOMING=true)", async () => {
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    const response = await trusting.fetch('/api/v1/health', { headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` } });
    expect(parseTraceResponse(response.headers.get('traceresponse')).traceId).toBe(callerTrace);
    const span = await spanOf(response);
    expect(span).toMatchObject({ traceId: callerTrace, parentSpanId: callerSpan, links: [], name: 'system.health' });
  });

  it('answers hostile trace headers and paths as without them: never a 500, always a new valid traceresponse when untrusted', async () => {
    const zeros = `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01`;
    const cases: [string, Record<string, string>][] = [
      ['/api/v1/health', { traceparent: zeros }],
      ['/api/v1/health', { traceparent: 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }],
      ['/api/v1/health', { traceparent: `00-${'g'.repeat(32)}-${'1'.repeat(16)}-01`, tracestate: 'x'.repeat(10_000) }],
      ['/api/v1/health', { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01, 00-1af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }],
      ['/api/v1/health', { tracestate: '=,==,a=%ZZ', baggage: 'k=%E0%A4%A,=v;;;,%00=1' }],
      ['/api/v1/%E0%A4%A?x=%00', { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }],
      [`/api/v1/workspaces?organizationId=${encodeURIComponent('\u0000')}`, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }],
    ];
    for (const target of [server, trusting]) {
      for (const [path, headers] of cases) {
        const response = await target.fetch(path, { headers });
        expect(response.status, `${path} ${JSON.stringify(headers).slice(0, 80)}`).toBeLessThan(500);
        const { traceId } = parseTraceResponse(response.headers.get('traceresponse'));
        expect(traceId).not.toBe('0'.repeat(32));
        if (target === server) expect(traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
      }
    }
  });

  it('ends an event stream’s span when its response ends', async () => {
    const controller = new AbortController();
    const response = await fetch(`${server.origin}/api/v1/organizations/${organizationId}/jobs/stream`, { headers: user.headers, signal: controller.signal });
    expect(response.status).toBe(200);
    const { spanId } = parseTraceResponse(response.headers.get('traceresponse'));
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toMatch(/event: ready|retry:|^:/);
    await tracing.flush();
    expect(receiver.spans.some((span) => span.spanId === spanId)).toBe(false); // still open
    controller.abort();
    await reader.cancel().catch(() => undefined);
    const spans = await receiver.until((received) => received.some((span) => span.spanId === spanId));
    expect(spans.find((span) => span.spanId === spanId)).toMatchObject({
      name: 'jobs.stream',
      attributes: { 'http.route': '/api/v1/organizations/{organizationId}/jobs/stream', 'app.organization.id': organizationId },
    });
  });

  it('exports no token and no password', async () => {
    const signIn = await server.fetch('/api/auth/sign-in/email', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: user.email, password: TEST_PASSWORD }) });
    expect(signIn.status).toBe(200);
    const token = signIn.headers.get('set-auth-token')!;
    expect(token).toBeTruthy();
    const after = await server.fetch(`/api/v1/workspaces?organizationId=${organizationId}`, { headers: { authorization: `Bearer ${token}` } });
    await spanOf(signIn);
    await spanOf(after);
    await tracing.flush();
    const exported = receiver.raw.join('\n');
    for (const secret of [token, token.split('.').at(-1)!, user.token, user.token.split('.').at(-1)!, TEST_PASSWORD]) expect(exported).not.toContain(secret);
  });
});

/**
 * One black-box suite, run against the Prism mock of the contract and against the real server:
 * whatever a contract tester can rely on from the mock holds for the service too. Every answer is
 * checked against the contract's schema for its status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { procedures, type ProcedureDefinition } from '../../generated/procedures.ts';
import { assertMatchesContract } from '../support/contract-check.ts';
import { exampleInput, restRequest } from '../support/example-inputs.ts';
import { startPrism } from '../support/prism.ts';
import { startTestServer } from '../support/server.ts';

interface Target {
  /** The REST base URL: the mock serves paths without the /api/v1 prefix (toolchain.md). */
  base: string;
  close(): Promise<void>;
}

const targets: [string, () => Promise<Target>][] = [
  ['Prism mock', async () => {
    const prism = await startPrism();
    return { base: prism.origin, close: prism.close };
  }],
  ['real server', async () => {
    const server = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
    return { base: `${server.origin}/api/v1`, close: server.close };
  }],
];

describe.each(targets)('against the %s', (_name, start) => {
  let target: Target;
  beforeAll(async () => {
    target = await start();
  }, 90_000);
  afterAll(() => target.close());

  /** Calls an operation by its REST path and checks the answer against the contract. */
  async function call(path: string, init: RequestInit = {}) {
    const response = await fetch(`${target.base}${path}`, init);
    const text = await response.text();
    const body = text ? JSON.parse(text) : undefined;
    assertMatchesContract(init.method ?? 'GET', new URL(`http://contract/api/v1${path}`), response.status, response.headers.get('content-type'), body);
    return { status: response.status, body };
  }

  it('system.health answers ok with a version and a time', async () => {
    const { status, body } = await call('/health');
    expect(status).toBe(200);
    expect(body.status).toBe('ok');
    expect(typeof body.version).toBe('string');
    expect(Number.isNaN(Date.parse(body.time))).toBe(false);
  });

  it('system.authConfig answers the sign-in configuration', async () => {
    const { status, body } = await call('/auth-config');
    expect(status).toBe(200);
    expect(Array.isArray(body.socialProviders)).toBe(true);
  });

  it('contact.send refuses an invalid message with 400 BAD_REQUEST', async () => {
    const { status, body } = await call('/contact', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'ada@example.com', message: 'short' }) });
    expect(status).toBe(400);
    expect(body.code).toBe('BAD_REQUEST');
  });

  const guarded = (Object.values(procedures) as ProcedureDefinition[]).filter((p) => p.access !== 'public' && p.produces === 'json');
  it.each(guarded.map((p) => [p.name, p]))('%s without credentials answers 401 UNAUTHORIZED', async (_name, procedure) => {
    const { path, init } = restRequest(procedure, exampleInput(procedure));
    const { status, body } = await call(path.replace(/^\/api\/v1/, ''), init);
    expect(status).toBe(401);
    expect(body.code).toBe('UNAUTHORIZED');
  });
});

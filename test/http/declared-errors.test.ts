/**
 * The build tells you (issue 25, item 3): a handler may throw only the error codes its operation
 * declares, and an error answer must match its declared response, as success answers must.
 * Outside production either break is answered 500 and logged, so a test that reaches it fails;
 * in production (VALIDATE_RESPONSES off) the error goes out as thrown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/contract/errors.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const handlers = {
  // system.health declares BAD_REQUEST, METHOD_NOT_ALLOWED and TOO_MANY_REQUESTS only.
  'system.health': () => {
    throw new ApiError('CONFLICT', { message: 'not a code of this operation' });
  },
  // BAD_REQUEST is declared, but its body carries `data.issues` (the cast gets past ErrorData's type, as a careless handler's `any` would).
  'system.authConfig': () => {
    throw new ApiError('BAD_REQUEST', { message: 'no issues', data: { unexpected: true } as never });
  },
};

describe('error answers are held to the contract', () => {
  let checked: TestServer;
  let unchecked: TestServer;
  beforeAll(async () => {
    checked = await startTestServer({ overrides: { handlers } });
    unchecked = await startTestServer({ env: { VALIDATE_RESPONSES: 'false' }, overrides: { handlers } });
  });
  afterAll(async () => {
    await checked?.close();
    await unchecked?.close();
  });

  it('an undeclared code is a 500, logged with the operation and the code', async () => {
    for (const path of ['/api/v1/health', '/rpc/system/health']) {
      const response = await checked.fetch(path, path.startsWith('/rpc') ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' } : {});
      expect(response.status, path).toBe(500);
      expect(await response.json()).toMatchObject({ error: 'internal_error' });
    }
    expect(checked.logs.some((line) => String(line.err && (line.err as { message?: string }).message).includes('system.health threw CONFLICT, which its contract does not declare'))).toBe(true);
  });

  it('a declared code whose body breaks its response schema is a 500', async () => {
    const response = await checked.fetch('/api/v1/auth-config');
    expect(response.status).toBe(500);
    expect(checked.logs.some((line) => line.msg === 'error answer outside the contract' && line.operation === 'system.authConfig')).toBe(true);
  });

  it('without response validation (production) the error goes out as thrown', async () => {
    // Plain fetch: the harness's own fetch refuses an undeclared status, which is the point here.
    const response = await fetch(`${unchecked.origin}/api/v1/health`);
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: 'CONFLICT', defined: false });
  });
});

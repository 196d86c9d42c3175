/**
 * A BAD_REQUEST lists at most MAX_ISSUES issues and counts the rest (data.omittedIssues and the
 * message), so an answer stays a small multiple of its request: a 20 KB body whose array holds
 * 10,000 wrong items used to get a 2 MB answer. Table-driven on badRequest, then a real fetch on
 * each transport (the test server checks every answer against the contract).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { badRequest, errorCatalogue, MAX_ISSUES, type ValidationIssue } from '../../src/contract/errors.ts';
import type { TestServer } from '../support/server.ts';
import { startTenantServer, type Tenant } from '../jobs/support.ts';

const issues = (count: number): ValidationIssue[] => Array.from({ length: count }, (_, i) => ({ path: ['items', i], message: 'must be string' }));

describe('badRequest', () => {
  const cases: { given: number; want: { listed: number; omittedIssues?: number } }[] = [
    { given: 1, want: { listed: 1 } },
    { given: MAX_ISSUES, want: { listed: MAX_ISSUES } },
    { given: MAX_ISSUES + 1, want: { listed: MAX_ISSUES, omittedIssues: 1 } },
    { given: 10_001, want: { listed: MAX_ISSUES, omittedIssues: 10_001 - MAX_ISSUES } },
  ];
  it.each(cases)('$given issues: $want.listed listed, $want.omittedIssues left out', ({ given, want }) => {
    const error = badRequest(issues(given));
    const data = error.data as { issues: ValidationIssue[]; omittedIssues?: number };
    expect(data.issues).toEqual(issues(want.listed));
    expect(data.omittedIssues).toBe(want.omittedIssues);
    if (want.omittedIssues === undefined) {
      expect(data).not.toHaveProperty('omittedIssues');
      expect(error.message).toBe(errorCatalogue.BAD_REQUEST.message);
    } else {
      expect(error.message).toBe(`${errorCatalogue.BAD_REQUEST.message} ${want.omittedIssues} more issues are not listed (${given} in all).`);
    }
  });

  it('keeps a message of its own, and says what it left out after it', () => {
    expect(badRequest(issues(MAX_ISSUES + 5), 'Invalid cursor.').message).toBe(`Invalid cursor. 5 more issues are not listed (${MAX_ISSUES + 5} in all).`);
  });
});

describe('10,000 wrong items, sent with fetch', () => {
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => {
    ({ server, t } = await startTenantServer({ env: { RATE_LIMIT_PER_MINUTE: '100000', AUTH_RATE_LIMIT_PER_MINUTE: '100000' }, aiService: false }));
  });
  afterAll(async () => {
    await server?.close();
  });

  // documents.search's filters.documentIds takes at most 100 ids: 10,000 numbers are 10,001 issues (maxItems, and a type each).
  const searchInput = () => ({ query: 'revenue', filters: { documentIds: Array.from({ length: 10_000 }, () => 1) } });
  const unknownFields = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`f${i}`, 1]));

  const requests: { name: string; path: () => string; body: () => unknown; omittedAtLeast: number }[] = [
    { name: 'REST', path: () => `/api/v1/workspaces/${t.workspaceId}/documents/search?organizationId=${t.org}`, body: searchInput, omittedAtLeast: 10_001 - MAX_ISSUES },
    { name: 'RPC', path: () => '/rpc/documents/search', body: () => ({ json: { organizationId: t.org, workspaceId: t.workspaceId, ...searchInput() } }), omittedAtLeast: 10_001 - MAX_ISSUES },
    {
      name: 'an identity route, 10,000 unknown fields',
      path: () => '/api/auth/sign-up/email',
      body: () => ({ email: 'new@example.com', password: 'correct horse battery staple', name: 'New', ...unknownFields }),
      omittedAtLeast: 10_000 - MAX_ISSUES,
    },
  ];

  it.each(requests)('$name: 400 with the first issues and the count of the rest, smaller than its request', async ({ path, body, omittedAtLeast }) => {
    const request = JSON.stringify(body());
    const response = await server.fetch(path(), { method: 'POST', headers: { 'content-type': 'application/json', ...t.owner.headers }, body: request });
    const text = await response.clone().text();
    expect(response.status).toBe(400);
    const answer = await response.json();
    expect(answer).toMatchObject({ code: 'BAD_REQUEST', status: 400, data: { omittedIssues: expect.any(Number) } });
    expect(answer.data.issues).toHaveLength(MAX_ISSUES);
    expect(answer.data.omittedIssues).toBeGreaterThanOrEqual(omittedAtLeast);
    expect(answer.message).toContain(`${answer.data.omittedIssues} more issues are not listed (${answer.data.omittedIssues + MAX_ISSUES} in all).`);
    expect(Buffer.byteLength(text)).toBeLessThan(Buffer.byteLength(request));
  });

  it('a few issues are all listed, with no count', async () => {
    const response = await server.fetch(`/api/v1/workspaces/${t.workspaceId}/documents/search?organizationId=${t.org}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...t.owner.headers },
      body: JSON.stringify({ query: '', limit: 0, extra: true }),
    });
    expect(response.status).toBe(400);
    const answer = await response.json();
    expect(answer.data.issues.length).toBeGreaterThanOrEqual(3);
    expect(answer.data.issues.length).toBeLessThanOrEqual(MAX_ISSUES);
    expect(answer.data).not.toHaveProperty('omittedIssues');
  });
});

/**
 * The client's safe retries and auth against the real server: an Idempotency-Key on the operations
 * the contract declares it for (a fresh one per call, the same on every retry of it), network
 * failures (fetch throwing) retried only for those and for reads, never an HTTP error; and the
 * session token as a cookie instead of a bearer token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClientError, createClient, idempotentProcedures, type ClientOptions } from '../../clients/typescript/src/index.ts';
import { procedures } from '../../generated/procedures.ts';
import { startTestServer, urlOf, type TestServer } from '../support/server.ts';
import { procedureHandlers } from '../../src/composition/handlers.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

let server: TestServer;
let user: TestUser;
let org: string;
beforeAll(async () => {
  server = await startTestServer({ aiService: false });
  user = await createUser(server.db);
  org = await addMembership(server.db, user, 'owner');
});
afterAll(() => server?.close());

interface Attempt {
  procedure: string;
  key: string | null;
}

/**
 * A fetch to the test server that records every attempt and fails the way `plan` says for the
 * attempt's number (from 0): `before` throws without sending (a refused connection), `after`
 * sends, lets the server do the work, then throws (the answer lost on the way back).
 */
function flaky(plan: (attempt: number) => 'before' | 'after' | 'pass') {
  const attempts: Attempt[] = [];
  const fetch: typeof globalThis.fetch = async (url, init) => {
    const headers = new Headers(init?.headers);
    attempts.push({ procedure: new URL(urlOf(url)).pathname.replace(/^\/rpc\//, '').replaceAll('/', '.'), key: headers.get('idempotency-key') });
    const failure = plan(attempts.length - 1);
    if (failure === 'before') throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
    const response = await server.fetch(urlOf(url), init);
    if (failure === 'after') {
      await response.arrayBuffer();
      throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
    }
    return response;
  };
  return { attempts, fetch };
}

const clientWith = (fetch: typeof globalThis.fetch, options: Partial<ClientOptions> = {}) => createClient({ baseUrl: server.origin, token: user.token, fetch, retryDelayMs: 1, ...options });

let slugs = 0;
const slug = () => `retry-${++slugs}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('idempotency keys', () => {
  it('are generated for exactly the procedures whose route row is idempotent (the contract declares the header)', () => {
    const declared = Object.values(procedures)
      .filter((row) => 'idempotent' in row && row.idempotent)
      .map((row) => row.name);
    expect([...idempotentProcedures].sort()).toEqual(declared.sort());
    expect([...idempotentProcedures].sort()).toEqual(['contact.send', 'documents.complete', 'documents.createUpload', 'jobs.create', 'jobs.retry', 'workspaces.create']);
  });

  it('sends a fresh random key on each call, and the one given when asked', async () => {
    const { attempts, fetch } = flaky(() => 'pass');
    const client = clientWith(fetch);
    await client.workspaces.create({ organizationId: org, name: 'One', slug: slug() });
    await client.workspaces.create({ organizationId: org, name: 'Two', slug: slug() });
    await client.workspaces.create({ organizationId: org, name: 'Three', slug: slug() }, { idempotencyKey: 'partner-key-0001' });
    await client.workspaces.list({ organizationId: org });
    expect(attempts.map((attempt) => attempt.procedure)).toEqual(['workspaces.create', 'workspaces.create', 'workspaces.create', 'workspaces.list']);
    const [first, second, given, list] = attempts.map((attempt) => attempt.key);
    expect(first).toMatch(UUID);
    expect(second).toMatch(UUID);
    expect(second).not.toBe(first);
    expect(given).toBe('partner-key-0001');
    expect(list).toBeNull();
  });
});

describe('retries after a network failure', () => {
  it('retries a create that never reached the server, with the same key', async () => {
    const { attempts, fetch } = flaky((attempt) => (attempt < 2 ? 'before' : 'pass'));
    const name = slug();
    const workspace = await clientWith(fetch).workspaces.create({ organizationId: org, name: 'Refused twice', slug: name });
    expect(workspace).toMatchObject({ slug: name, createdAt: expect.any(Date) });
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((attempt) => attempt.key)).size).toBe(1);
  });

  it('retries a create whose answer was lost with the same key: the server answers the first result, one workspace exists', async () => {
    const { attempts, fetch } = flaky((attempt) => (attempt === 0 ? 'after' : 'pass'));
    const name = slug();
    const workspace = await clientWith(fetch).workspaces.create({ organizationId: org, name: 'Answer lost', slug: name });
    expect(attempts).toHaveLength(2);
    expect(attempts[1]!.key).toBe(attempts[0]!.key);
    const all = await clientWith(globalThis.fetch).workspaces.list({ organizationId: org });
    expect(all.filter((row) => row.slug === name)).toEqual([workspace]);
  });

  it('waits out the first request still running after its connection was cut: in-progress 409s are retried, one workspace exists', async () => {
    // A slow create (the real handler, 300 ms late), so the retries arrive while the first still runs.
    const slow = await startTestServer({
      aiService: false,
      db: server.db,
      overrides: {
        handlers: {
          'workspaces.create': async (input, ctx) => {
            await new Promise((resolve) => setTimeout(resolve, 300));
            return procedureHandlers['workspaces.create'](input, ctx);
          },
        },
      },
    });
    try {
      const statuses: number[] = [];
      let first = true;
      const fetch: typeof globalThis.fetch = async (url, init) => {
        const sent = globalThis.fetch(urlOf(url).replace(server.origin, slow.origin), init);
        if (first) {
          // The request goes out, the connection is cut at once: the service goes on working.
          first = false;
          void sent.then(
            (response) => response.arrayBuffer(),
            () => undefined,
          );
          throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
        }
        const response = await sent;
        statuses.push(response.status);
        return response;
      };
      const name = slug();
      const workspace = await clientWith(fetch, { retryDelayMs: 100, retries: 6 }).workspaces.create({ organizationId: org, name: 'Cut off', slug: name });
      expect(statuses[0]).toBe(409);
      expect(statuses.at(-1)).toBe(200);
      const all = await clientWith(globalThis.fetch).workspaces.list({ organizationId: org });
      expect(all.filter((row) => row.slug === name)).toEqual([workspace]);
    } finally {
      await slow.close();
    }
  });

  it('retries a read, which carries no key', async () => {
    const { attempts, fetch } = flaky((attempt) => (attempt === 0 ? 'before' : 'pass'));
    expect(await clientWith(fetch).workspaces.list({ organizationId: org })).toEqual(expect.any(Array));
    expect(attempts).toEqual([
      { procedure: 'workspaces.list', key: null },
      { procedure: 'workspaces.list', key: null },
    ]);
  });

  it('never retries an operation without a key that is not a read, and says it was the network', async () => {
    const { fetch: pass } = flaky(() => 'pass');
    const workspace = await clientWith(pass).workspaces.create({ organizationId: org, name: 'To rename', slug: slug() });
    const { attempts, fetch } = flaky(() => 'before');
    const error = await clientWith(fetch)
      .workspaces.update({ id: workspace.id, name: 'Renamed' })
      .catch((caught: unknown) => caught);
    expect(attempts).toEqual([{ procedure: 'workspaces.update', key: null }]);
    expect(error).toBeInstanceOf(ApiClientError);
    expect(error).toMatchObject({ code: 'network_error', status: 0, requestId: undefined, cause: expect.any(TypeError) });
  });

  it('gives up after `retries` more attempts', async () => {
    const { attempts, fetch } = flaky(() => 'before');
    const error = await clientWith(fetch, { retries: 2 })
      .jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: ['a'] } })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'ApiClientError', code: 'network_error', status: 0 });
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((attempt) => attempt.key)).size).toBe(1);
  });

  it('never retries an answer with an error status', async () => {
    const { attempts, fetch } = flaky(() => 'pass');
    const error = await clientWith(fetch)
      .workspaces.create({ organizationId: org, name: 'Bad', slug: 'NOT A SLUG' })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'BAD_REQUEST', status: 400, requestId: expect.any(String) });
    expect(attempts).toHaveLength(1);
  });

  it('stops at once when the call is aborted', async () => {
    const controller = new AbortController();
    const { attempts, fetch } = flaky(() => {
      controller.abort(new Error('the caller gave up'));
      return 'before';
    });
    const error = await clientWith(fetch)
      .workspaces.list({ organizationId: org }, { signal: controller.signal })
      .catch((caught: unknown) => caught);
    expect(error).toEqual(new Error('the caller gave up'));
    expect(attempts).toHaveLength(1);
  });
});

describe('auth', () => {
  it('sends the session token as the session cookie; a state-changing call with a cookie needs a trusted Origin', async () => {
    const seen: Headers[] = [];
    const fetch: typeof globalThis.fetch = (url, init) => {
      seen.push(new Headers(init?.headers));
      return server.fetch(urlOf(url), init);
    };
    const cookie = createClient({ baseUrl: server.origin, sessionCookie: user.token, fetch, headers: { origin: server.origin } });
    expect(await cookie.user.me()).toMatchObject({ id: user.id });
    expect(seen[0]!.get('cookie')).toBe(`session=${encodeURIComponent(user.token)}`);
    expect(seen[0]!.get('authorization')).toBeNull();
    expect(await cookie.workspaces.create({ organizationId: org, name: 'By cookie', slug: slug() })).toMatchObject({ name: 'By cookie' });

    // Every RPC call is a POST: with a cookie and no trusted Origin, the CSRF check refuses it.
    const noOrigin = createClient({ baseUrl: server.origin, sessionCookie: user.token, fetch });
    await expect(noOrigin.user.me()).rejects.toMatchObject({ name: 'ApiClientError', code: 'FORBIDDEN', status: 403 });
  });
});

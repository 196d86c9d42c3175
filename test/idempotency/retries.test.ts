/**
 * Idempotent retries (docs/idempotency.md) against the real server on the embedded database, over
 * both transports: the first answer to a key is kept per caller and replayed (same status, same
 * body, Idempotent-Replayed: true); the same key with another request is 409; another caller's
 * key is another key; no key, no deduplication; 4xx answers are kept, 429 and 5xx are not; a key
 * whose first request is still running answers 409; keys expire after 24 hours and are swept.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Handlers } from '../../src/context.ts';
import { ApiError } from '../../src/contract/errors.ts';
import { workspaceProcedures } from '../../src/workspaces/procedures.ts';
import { sweepExpired } from '../../src/auth/expired-sweeper.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { call, newKey, payload, slug, type Transport } from './support.ts';

const HOUR = 3600_000;
let server: TestServer;
let owner: TestUser, other: TestUser;
let org: string, otherOrg: string, workspaceId: string;
/** The service clock runs this far ahead of the real one (services.now). */
let clockOffsetMs = 0;

/** What the wrapped workspaces.create does next (for the slug named), before the real handler runs. */
const next = new Map<string, { fail?: () => never; hold?: { entered: PromiseWithResolvers<void>; release: PromiseWithResolvers<void> } }>();
const handlers: Handlers = {
  'workspaces.create': async (input, ctx) => {
    const plan = next.get(input.slug);
    if (plan?.hold) {
      plan.hold.entered.resolve();
      await plan.hold.release.promise;
    }
    if (plan?.fail) {
      next.delete(input.slug);
      plan.fail();
    }
    return workspaceProcedures['workspaces.create'](input, ctx);
  },
};

beforeAll(async () => {
  server = await startTestServer({
    aiService: false,
    env: { RATE_LIMIT_PER_MINUTE: '100000', WORKER: 'off', AI_URL: 'http://127.0.0.1:9' },
    overrides: { handlers, now: () => new Date(Date.now() + clockOffsetMs) },
  });
  [owner, other] = await Promise.all([createUser(server.db), createUser(server.db)]);
  org = await addMembership(server.db, owner, 'owner');
  otherOrg = await addMembership(server.db, other, 'owner');
  const created = await call(server, 'rest', 'workspaces.create', { organizationId: org, name: 'Documents', slug: slug('docs') }, { headers: owner.headers });
  expect(created.status).toBe(200);
  workspaceId = created.body.id;
}, 60_000);
afterAll(() => server?.close());

const count = async (table: 'workspaces' | 'documents' | 'jobs', column: string, value: string): Promise<number> => {
  const [row] = await server.db.sql<{ n: number }[]>`select count(*)::int as n from ${server.db.sql(table)} where ${server.db.sql(column)} = ${value}`;
  return row!.n;
};
const uploadInput = (name: string) => ({ organizationId: org, workspaceId, name, contentType: 'text/plain', size: 5 });

describe.each<Transport>(['rest', 'rpc'])('over %s', (transport) => {
  it('replays the first answer to a retry: same status, same body, Idempotent-Replayed: true; one workspace', async () => {
    const key = newKey();
    const input = { organizationId: org, name: 'Once', slug: slug() };
    const first = await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
    expect(first.status).toBe(200);
    expect(first.replayed).toBeNull();
    const retry = await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
    expect(retry.status).toBe(200);
    expect(retry.replayed).toBe('true');
    expect(retry.text).toBe(first.text);
    expect(await count('workspaces', 'slug', input.slug)).toBe(1);
  });

  it('replays an answer with dates exactly (documents.createUpload), and one document is made', async () => {
    const key = newKey();
    const name = `${slug('upload')}.txt`;
    const first = await call(server, transport, 'documents.createUpload', uploadInput(name), { key, headers: owner.headers });
    expect(first.status).toBe(200);
    if (transport === 'rpc') expect(first.body.meta).toContainEqual(['date', ['document', 'createdAt']]);
    const retry = await call(server, transport, 'documents.createUpload', uploadInput(name), { key, headers: owner.headers });
    expect([retry.status, retry.replayed]).toEqual([200, 'true']);
    expect(retry.text).toBe(first.text);
    expect(await count('documents', 'name', name)).toBe(1);
  });

  it('answers 409 CONFLICT to the same key with another input, or for another operation, and does nothing', async () => {
    const key = newKey();
    const input = { organizationId: org, name: 'First', slug: slug() };
    expect((await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers })).status).toBe(200);

    const otherInput = { ...input, slug: slug() };
    const changed = await call(server, transport, 'workspaces.create', otherInput, { key, headers: owner.headers });
    expect(changed.status).toBe(409);
    expect(changed.body).toMatchObject({ code: 'CONFLICT', defined: true });
    expect(changed.body.message).toMatch(/already used with a different input/);
    expect(changed.replayed).toBeNull();
    expect(await count('workspaces', 'slug', otherInput.slug)).toBe(0);

    const name = `${slug('other-op')}.txt`;
    const elsewhere = await call(server, transport, 'documents.createUpload', uploadInput(name), { key, headers: owner.headers });
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body).toMatchObject({ code: 'CONFLICT', defined: true });
    expect(elsewhere.body.message).toMatch(/already used for workspaces\.create/);
    expect(await count('documents', 'name', name)).toBe(0);
  });

  it('keeps keys per caller: another user with the same key does the work of their own', async () => {
    const key = newKey();
    const mine = await call(server, transport, 'workspaces.create', { organizationId: org, name: 'Mine', slug: slug() }, { key, headers: owner.headers });
    const theirs = await call(server, transport, 'workspaces.create', { organizationId: otherOrg, name: 'Theirs', slug: slug() }, { key, headers: other.headers });
    expect([mine.status, theirs.status]).toEqual([200, 200]);
    expect(theirs.replayed).toBeNull();
    expect(payload(transport, theirs).id).not.toBe(payload(transport, mine).id);
    expect(payload(transport, theirs).organizationId).toBe(otherOrg);
  });

  it('does not deduplicate without a key: the same request twice makes two documents', async () => {
    const name = `${slug('no-key')}.txt`;
    const first = await call(server, transport, 'documents.createUpload', uploadInput(name), { headers: owner.headers });
    const second = await call(server, transport, 'documents.createUpload', uploadInput(name), { headers: owner.headers });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.replayed).toBeNull();
    expect(payload(transport, second).document.id).not.toBe(payload(transport, first).document.id);
    expect(await count('documents', 'name', name)).toBe(2);
  });

  it('replays a 4xx first answer even once its cause is gone (a taken slug), with the header', async () => {
    const taken = slug('taken');
    const existing = await call(server, transport, 'workspaces.create', { organizationId: org, name: 'Taken', slug: taken }, { headers: owner.headers });
    expect(existing.status).toBe(200);
    const key = newKey();
    const input = { organizationId: org, name: 'Wants the slug', slug: taken };
    const first = await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
    expect(first.status).toBe(409);
    expect(first.body.message).toBe('This slug is taken in the organization.');
    expect(first.replayed).toBeNull();

    expect((await call(server, 'rest', 'workspaces.delete', { id: payload(transport, existing).id }, { headers: owner.headers })).status).toBe(200);
    const retry = await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
    expect([retry.status, retry.replayed]).toEqual([409, 'true']);
    expect(retry.text).toBe(first.text);
    expect(await count('workspaces', 'slug', taken)).toBe(0);
    // A new key is a new request: the slug is free now.
    expect((await call(server, transport, 'workspaces.create', input, { key: newKey(), headers: owner.headers })).status).toBe(200);
  });

  it.each([
    [
      '503',
      () => {
        throw new ApiError('SERVICE_UNAVAILABLE');
      },
      503,
    ],
    [
      '429',
      () => {
        throw new ApiError('TOO_MANY_REQUESTS', { headers: { 'Retry-After': '1' } });
      },
      429,
    ],
    [
      '500',
      () => {
        throw new Error('the handler broke');
      },
      500,
    ],
  ] as const)('does not keep a %s: the retry with the key does the work', async (_name, fail, status) => {
    const key = newKey();
    const input = { organizationId: org, name: 'After an outage', slug: slug() };
    next.set(input.slug, { fail });
    const first = await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
    expect(first.status).toBe(status);
    expect(await count('workspaces', 'slug', input.slug)).toBe(0);
    const retry = await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
    expect([retry.status, retry.replayed]).toEqual([200, null]);
    expect(await count('workspaces', 'slug', input.slug)).toBe(1);
    const again = await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
    expect([again.status, again.replayed, again.text]).toEqual([200, 'true', retry.text]);
  });

  it('answers 409 to a second request while the first with the key still runs; then replays its answer', async () => {
    const key = newKey();
    const input = { organizationId: org, name: 'Slow', slug: slug() };
    const hold = { entered: Promise.withResolvers<void>(), release: Promise.withResolvers<void>() };
    next.set(input.slug, { hold });
    const first = call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
    try {
      await hold.entered.promise; // the first request holds the key and is inside the handler
      const second = await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
      expect(second.status).toBe(409);
      expect(second.body.message).toMatch(/still in progress/);
      expect(second.replayed).toBeNull();
    } finally {
      next.delete(input.slug);
      hold.release.resolve();
    }
    const answered = await first;
    expect([answered.status, answered.replayed]).toEqual([200, null]);
    const third = await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
    expect([third.status, third.replayed, third.text]).toEqual([200, 'true', answered.text]);
    expect(await count('workspaces', 'slug', input.slug)).toBe(1);
  });

  it('refuses a malformed key with 400 at Idempotency-Key, before any work', async () => {
    const input = { organizationId: org, name: 'Bad key', slug: slug() };
    for (const key of ['k'.repeat(256), 'caf\u00e9', '']) {
      const answer = await call(server, transport, 'workspaces.create', input, { key, headers: owner.headers });
      expect(answer.status, JSON.stringify(key)).toBe(400);
      expect(answer.body).toMatchObject({ code: 'BAD_REQUEST', data: { issues: [{ path: ['Idempotency-Key'] }] } });
    }
    expect(await count('workspaces', 'slug', input.slug)).toBe(0);
    // The longest key, and one with spaces inside, are fine.
    // (Keys of their own per transport: a key reused with another slug would be a 409.)
    for (const key of [`${transport}-`.padEnd(255, 'k'), `order 42 / create / ${transport}`]) {
      const answer = await call(server, transport, 'workspaces.create', { ...input, slug: slug() }, { key, headers: owner.headers });
      expect(answer.status, key).toBe(200);
    }
  });
});

describe('across transports and operations', () => {
  it('a key first used over REST is replayed over RPC, and the other way round', async () => {
    const key = newKey();
    const input = { organizationId: org, name: 'Both ways', slug: slug() };
    const rest = await call(server, 'rest', 'workspaces.create', input, { key, headers: owner.headers });
    const rpc = await call(server, 'rpc', 'workspaces.create', input, { key, headers: owner.headers });
    expect([rest.status, rpc.status, rpc.replayed]).toEqual([200, 200, 'true']);
    expect(rpc.body.json).toEqual(rest.body);

    const other = newKey();
    const name = `${slug('both')}.txt`;
    const viaRpc = await call(server, 'rpc', 'documents.createUpload', uploadInput(name), { key: other, headers: owner.headers });
    const viaRest = await call(server, 'rest', 'documents.createUpload', uploadInput(name), { key: other, headers: owner.headers });
    expect([viaRpc.status, viaRest.status, viaRest.replayed]).toEqual([200, 200, 'true']);
    expect(viaRest.body).toEqual(viaRpc.body.json);
    expect(await count('documents', 'name', name)).toBe(1);
  });

  it('documents.complete: a 412 before the bytes arrived is replayed; the finished answer is replayed too', async () => {
    const created = await call(server, 'rest', 'documents.createUpload', uploadInput(`${slug('complete')}.txt`), { headers: owner.headers });
    const { document, upload } = created.body;
    const early = newKey();
    const tooSoon = await call(server, 'rest', 'documents.complete', { id: document.id }, { key: early, headers: owner.headers });
    expect(tooSoon.status).toBe(412);
    expect((await fetch(upload.url, { method: 'PUT', headers: upload.headers, body: 'hello' })).status).toBe(200);
    const stillKept = await call(server, 'rest', 'documents.complete', { id: document.id }, { key: early, headers: owner.headers });
    expect([stillKept.status, stillKept.replayed, stillKept.text]).toEqual([412, 'true', tooSoon.text]);

    const key = newKey();
    const done = await call(server, 'rpc', 'documents.complete', { id: document.id }, { key, headers: owner.headers });
    expect(done.status).toBe(200);
    expect(done.body.json).toMatchObject({ id: document.id, status: 'ready', size: 5 });
    const again = await call(server, 'rpc', 'documents.complete', { id: document.id }, { key, headers: owner.headers });
    expect([again.status, again.replayed, again.text]).toEqual([200, 'true', done.text]);
  });

  it('jobs.create and jobs.retry: one job per key', async () => {
    const key = newKey();
    const input = { organizationId: org, kind: 'text.embed', input: { texts: [slug('embed')] } };
    const first = await call(server, 'rest', 'jobs.create', input, { key, headers: owner.headers });
    const retry = await call(server, 'rpc', 'jobs.create', input, { key, headers: owner.headers });
    expect([first.status, retry.status, retry.replayed]).toEqual([200, 200, 'true']);
    expect(retry.body.json.id).toBe(first.body.id);
    const [jobs] = await server.db.sql<{ n: number }[]>`select count(*)::int as n from jobs where organization_id = ${org} and input = ${server.db.sql.json(input.input)}`;
    expect(jobs!.n).toBe(1);

    // No worker here (WORKER=off): the job is failed by hand, as the worker would leave it.
    await server.db.sql`update jobs set status = 'failed', error_message = 'failed for the test', finished_at = now() where id = ${first.body.id}`;
    const retryKey = newKey();
    const retried = await call(server, 'rest', 'jobs.retry', { id: first.body.id }, { key: retryKey, headers: owner.headers });
    expect(retried.status).toBe(200);
    expect(retried.body.retryOf).toBe(first.body.id);
    // A second retry of the job would be 409 (retried already): the key answers the first retry's job.
    const replayed = await call(server, 'rest', 'jobs.retry', { id: first.body.id }, { key: retryKey, headers: owner.headers });
    expect([replayed.status, replayed.replayed, replayed.text]).toEqual([200, 'true', retried.text]);
    expect((await call(server, 'rest', 'jobs.retry', { id: first.body.id }, { key: newKey(), headers: owner.headers })).status).toBe(409);
  });

  it('contact.send keeps keys per client address without a session, and per user with one', async () => {
    // No contact address is configured here: the form answers 412, an answer like any other.
    const key = newKey();
    const input = { email: 'ada@example.com', message: 'Hello, about the team plan.' };
    const first = await call(server, 'rest', 'contact.send', input, { key });
    expect([first.status, first.replayed]).toEqual([412, null]);
    const retry = await call(server, 'rpc', 'contact.send', input, { key });
    expect([retry.status, retry.replayed, retry.text]).toEqual([412, 'true', first.text]);
    const signedIn = await call(server, 'rest', 'contact.send', input, { key, headers: owner.headers });
    expect([signedIn.status, signedIn.replayed]).toEqual([412, null]);
    const changed = await call(server, 'rest', 'contact.send', { ...input, message: 'Another message entirely.' }, { key });
    expect(changed.status).toBe(409);
  });

  it('answers a burst of one key with one workspace: the rest are replays or 409 in progress', async () => {
    const key = newKey();
    const input = { organizationId: org, name: 'Burst', slug: slug() };
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => call(server, i % 2 === 0 ? 'rest' : 'rpc', 'workspaces.create', input, { key, headers: owner.headers })));
    const ids = new Set<string>();
    for (const [i, answer] of answers.entries()) {
      if (answer.status === 409) expect(answer.body.message).toMatch(/still in progress/);
      else {
        expect(answer.status).toBe(200);
        ids.add(payload(i % 2 === 0 ? 'rest' : 'rpc', answer).id);
      }
    }
    expect(answers.filter((answer) => answer.status === 200 && answer.replayed === null)).toHaveLength(1);
    expect(ids.size).toBe(1);
    expect(await count('workspaces', 'slug', input.slug)).toBe(1);
  });

  it('ignores the header on operations that do not declare it', async () => {
    const response = await server.fetch('/api/v1/me', { headers: { ...owner.headers, 'idempotency-key': 'k'.repeat(300) } });
    expect(response.status).toBe(200);
    expect(response.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('the 24-hour window', () => {
  it('frees a key 24 hours after its first use, and the sweep deletes it', async () => {
    const key = newKey();
    const input = { organizationId: org, name: 'Yesterday', slug: slug() };
    expect((await call(server, 'rest', 'workspaces.create', input, { key, headers: owner.headers })).status).toBe(200);
    const kept = await server.db.sql<{ created_at: Date }[]>`select created_at from idempotency_keys where key = ${key}`;
    expect(kept).toHaveLength(1);

    try {
      clockOffsetMs = 23 * HOUR; // still within the window: another input is a conflict
      expect((await call(server, 'rest', 'workspaces.create', { ...input, slug: slug() }, { key, headers: owner.headers })).status).toBe(409);
      expect((await sweepExpired(server.db.sql, server.services.now())).idempotencyKeys).toBe(0);

      clockOffsetMs = 24 * HOUR + 1000; // past it: the key is free again, for any request
      const later = { ...input, slug: slug() };
      const reused = await call(server, 'rest', 'workspaces.create', later, { key, headers: owner.headers });
      expect([reused.status, reused.replayed]).toEqual([200, null]);
      expect(await count('workspaces', 'slug', later.slug)).toBe(1);

      const other = newKey();
      expect((await call(server, 'rest', 'workspaces.create', { ...input, slug: slug() }, { key: other, headers: owner.headers })).status).toBe(200);
      // A day after that, the sweep deletes both keys (and every other key of this file, all older).
      const swept = await sweepExpired(server.db.sql, new Date(server.services.now().getTime() + 24 * HOUR + 1000));
      expect(swept.idempotencyKeys).toBeGreaterThanOrEqual(2);
      expect(await server.db.sql`select key from idempotency_keys where key in (${key}, ${other})`).toHaveLength(0);
    } finally {
      clockOffsetMs = 0;
    }
  });
});

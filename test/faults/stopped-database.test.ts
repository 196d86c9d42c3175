/**
 * A stopped database: `pg_ctl stop -m immediate` (every server process ends at once, as in a crash),
 * then started again on the same port and data directory. Meanwhile the service answers 503
 * SERVICE_UNAVAILABLE and /readyz 503; afterwards it recovers alone, with nothing restarted: what
 * was committed before the stop is there (the server runs with synchronous_commit on), and a job
 * that was running when the server went away finishes. Its first run's failure could not be
 * recorded (pg-boss's own connections were refused too), so the queue hands it out again once its
 * lease lapses: JOB_LEASE_SECONDS is at its minimum here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../generated/client.ts';
import { openDatabase, type Database } from '../../src/db/connection.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { answersAgain, eventually, heldEmbedder, postgresAvailable, startPrivateServer, type PrivateServer } from './support.ts';

describe.skipIf(!postgresAvailable)('a stopped database (immediate stop, then started again)', () => {
  let pg: PrivateServer;
  let db: Database;
  let server: TestServer;
  let user: TestUser;
  let org: string;
  // The job's AI call waits for the test: the job is running, between its transactions, when the server breaks.
  const embedding = heldEmbedder();
  const { ai } = embedding;

  beforeAll(async () => {
    pg = await startPrivateServer();
    const url = await pg.createDatabase('stopped');
    db = await openDatabase({ databaseUrl: url, dataDir: '/nonexistent', deadlineMs: 1500, statementTimeoutMs: 1000 });
    server = await startTestServer({ db, aiService: false, env: { JOB_LEASE_SECONDS: '10' }, overrides: { ai, queue: { retryDelaySeconds: 1, pollingSeconds: 0.5 } } });
    user = await createUser(db);
    org = await addMembership(db, user, 'owner');
  }, 120_000);
  afterAll(async () => {
    embedding.release.open();
    await server?.close();
    await db?.close();
    await pg?.close();
  });

  const list = () => fetch(`${server.origin}/api/v1/workspaces?organizationId=${org}`, { headers: user.headers });
  const ready = () => fetch(`${server.origin}/readyz`);
  const client = () => createClient({ baseUrl: server.origin, token: user.token, fetch: (url, init) => server.fetch(String(url), init) });

  it('answers 503 while the server is down and recovers alone once it is back; nothing committed is lost', { timeout: 90_000 }, async () => {
    const workspace = await client().workspaces.create({ organizationId: org, name: 'Before the stop', slug: 'before-the-stop' });
    const job = await client().jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: ['kept through the stop'] } });
    await embedding.started.wait();

    await pg.stopNow();
    const stoppedAt = performance.now();
    embedding.release.open(); // the worker now writes the job's result into a server that is gone

    const refused = await list();
    const firstAnswerMs = Math.round(performance.now() - stoppedAt);
    expect(refused.status).toBe(503);
    // Declared by every database-backed operation, with when to ask again.
    expect(await refused.json()).toEqual({ defined: true, code: 'SERVICE_UNAVAILABLE', status: 503, message: 'The service is temporarily unavailable, try again later.' });
    expect(refused.headers.get('retry-after')).toBe('5');
    const readiness = await ready();
    expect(readiness.status).toBe(503);
    expect(await readiness.json()).toEqual({ status: 'unavailable', checks: { database: 'unreachable' } });
    expect((await list()).status).toBe(503);

    await pg.startAgain();
    const startedAt = performance.now();
    const recovered = await answersAgain(list);
    const recoveredMs = Math.round(performance.now() - startedAt);
    expect(((await recovered.json()) as { id: string }[]).map((item) => item.id)).toEqual([workspace.id]);
    expect((await ready()).status).toBe(200);

    const finished = await eventually(async () => {
      const current = await client().jobs.get({ id: job.id });
      return ['succeeded', 'failed', 'canceled'].includes(current.status) ? current : undefined;
    }, 300);
    expect(finished).toMatchObject({ status: 'succeeded', result: { model: 'fault-test' } });
    console.info(`stopped database: first 503 after ${firstAnswerMs} ms, 200 again ${recoveredMs} ms after the server was back; job runs: ${embedding.calls()}`);
  });
});

/**
 * A hung database: its processes stopped (SIGSTOP), its connections open, so nothing answers and no
 * server-side timeout fires. With a client deadline of 1.5 s the service answers 503
 * SERVICE_UNAVAILABLE instead of hanging (the test's timeout would catch a hang), /readyz says
 * 503, the stuck connections are dropped, and once the server runs again (SIGCONT) the same calls
 * answer 200 with nothing restarted, and a job that was running when the server hung finishes
 * (src/db/deadline.ts, src/db/connection-watch.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../generated/client.ts';
import { openDatabase, type Database } from '../../src/db/connection.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { answersAgain, eventually, heldEmbedder, postgresAvailable, startPrivateServer, type PrivateServer } from './support.ts';

const DEADLINE_MS = 1500;

describe.skipIf(!postgresAvailable)('a hung database (processes stopped, connections open)', () => {
  let pg: PrivateServer;
  let db: Database;
  let server: TestServer;
  let user: TestUser;
  let org: string;
  const logged: string[] = [];
  // The job's AI call waits for the test: the job is running, between its transactions, when the server breaks.
  const embedding = heldEmbedder();
  const { ai } = embedding;

  beforeAll(async () => {
    pg = await startPrivateServer();
    const url = await pg.createDatabase('hung');
    const log = (_: object, msg?: string) => void logged.push(msg ?? '');
    db = await openDatabase({ databaseUrl: url, dataDir: '/nonexistent', deadlineMs: DEADLINE_MS, statementTimeoutMs: 1000, logger: { info: log, warn: log } });
    // The shortest lease: should the queue fail to record the first run's end, it hands the job out again soon.
    server = await startTestServer({ db, aiService: false, env: { JOB_LEASE_SECONDS: '10' }, overrides: { ai, queue: { retryDelaySeconds: 1, pollingSeconds: 0.5 } } });
    user = await createUser(db);
    org = await addMembership(db, user, 'owner');
  }, 120_000);
  afterAll(async () => {
    embedding.release.open();
    pg?.resume();
    await server?.close();
    await db?.close();
    await pg?.close();
  });

  const list = () => fetch(`${server.origin}/api/v1/workspaces?organizationId=${org}`, { headers: user.headers });
  const ready = () => fetch(`${server.origin}/readyz`);
  const client = () => createClient({ baseUrl: server.origin, token: user.token, fetch: (url, init) => server.fetch(String(url), init) });

  it('answers 503 while the server hangs, drops the stuck connections, and recovers alone; the running job finishes', { timeout: 90_000 }, async () => {
    const workspace = await client().workspaces.create({ organizationId: org, name: 'Before the hang', slug: 'before-the-hang' });
    const job = await client().jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: ['kept through the hang'] } });
    await embedding.started.wait();
    expect((await list()).status).toBe(200);

    pg.pause();
    const hungAt = performance.now();
    embedding.release.open(); // the worker now writes the job's result into the hung server

    const refused = await list();
    const firstAnswerMs = Math.round(performance.now() - hungAt);
    expect(refused.status).toBe(503);
    // Declared by every database-backed operation, with when to ask again.
    expect(await refused.json()).toEqual({ defined: true, code: 'SERVICE_UNAVAILABLE', status: 503, message: 'The service is temporarily unavailable, try again later.' });
    expect(refused.headers.get('retry-after')).toBe('5');
    const readiness = await ready();
    expect(readiness.status).toBe(503);
    expect(await readiness.json()).toEqual({ status: 'unavailable', checks: { database: 'timeout' } });

    // The pool finds its connections unanswered and the server silent to a fresh one: it drops them.
    await eventually(async () => (logged.some((msg) => msg.startsWith('the database server does not answer')) ? true : undefined));
    const droppedMs = Math.round(performance.now() - hungAt);
    // Still hung: the new connections wait in their start-up, and calls still end by the deadline.
    expect((await list()).status).toBe(503);

    pg.resume();
    const resumedAt = performance.now();
    const recovered = await answersAgain(list);
    const recoveredMs = Math.round(performance.now() - resumedAt);
    expect(((await recovered.json()) as { id: string }[]).map((item) => item.id)).toEqual([workspace.id]);
    expect((await ready()).status).toBe(200);

    // Its first run could not record its result; the queue runs it again, and it succeeds.
    const finished = await eventually(async () => {
      const current = await client().jobs.get({ id: job.id });
      return ['succeeded', 'failed', 'canceled'].includes(current.status) ? current : undefined;
    }, 300);
    expect(finished).toMatchObject({ status: 'succeeded', result: { model: 'fault-test' } });
    expect(embedding.calls()).toBeGreaterThanOrEqual(1);
    console.info(`hung database: first 503 after ${firstAnswerMs} ms, connections dropped after ${droppedMs} ms, 200 again ${recoveredMs} ms after resuming; job runs: ${embedding.calls()}`);
  });
});

/**
 * A hung pooler: PgBouncer stopped (SIGSTOP) in front of a running server, its client connections
 * open, so nothing answers, as with a hung server (test/faults/hung-database.test.ts, whose checks
 * this reuses). With a client deadline of 1.5 s the service answers 503 SERVICE_UNAVAILABLE within
 * the request deadline, /readyz says 503, the stuck connections to the pooler are dropped, and once
 * the pooler runs again the same calls answer 200 with nothing restarted. The server itself (the
 * DATABASE_DIRECT_URL the LISTEN connection uses) stays up throughout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import { openDatabase } from '../../src/db/connection.ts';
import { eventually, expectRecovered, expectUnavailable, heldEmbedder, startPrivateServer, type FaultService, type PrivateServer } from '../faults/support.ts';
import { clientFetch, startTestServer } from '../support/server.ts';
import { addMembership, createUser } from '../support/users.ts';
import { poolerAvailable, startPooler, type PrivatePooler } from './support.ts';

const DEADLINE_MS = 1500;

describe.skipIf(!poolerAvailable)('a hung pooler (PgBouncer stopped, connections open)', () => {
  let pg: PrivateServer;
  let pooler: PrivatePooler;
  let service: FaultService;
  const logged: string[] = [];

  beforeAll(async () => {
    pg = await startPrivateServer();
    pooler = await startPooler(pg.url, { poolSize: 5 });
    const direct = await pg.createDatabase('hung_pooler');
    const log = (_: object, msg?: string) => void logged.push(msg ?? '');
    // As test/faults/support.ts startFaultService, but through the pooler in transaction mode.
    const db = await openDatabase({
      databaseUrl: pooler.urlOf('hung_pooler'),
      poolMode: 'transaction',
      directUrl: direct,
      dataDir: '/nonexistent',
      deadlineMs: DEADLINE_MS,
      statementTimeoutMs: 1000,
      logger: { info: log, warn: log },
    });
    const server = await startTestServer({ db, aiService: false, env: { JOB_LEASE_SECONDS: '10' }, overrides: { ai: heldEmbedder().ai, queue: { retryDelaySeconds: 1, pollingSeconds: 0.5 } } });
    const user = await createUser(db);
    const org = await addMembership(db, user, 'owner');
    service = {
      db,
      server,
      user,
      org,
      list: () => fetch(`${server.origin}/api/v1/workspaces?organizationId=${org}`, { headers: user.headers }),
      ready: () => fetch(`${server.origin}/readyz`),
      client: () => createClient({ baseUrl: server.origin, token: user.token, fetch: clientFetch(server) }),
      async close() {
        await server.close();
        await db.close();
      },
    };
  }, 120_000);
  afterAll(async () => {
    pooler?.resume();
    await service?.close();
    await pooler?.close();
    await pg?.close();
  });

  it('answers 503 within the request deadline while the pooler hangs, drops its connections, and recovers alone', { timeout: 90_000 }, async () => {
    const workspace = await service.client().workspaces.create({ organizationId: service.org, name: 'Before the hang', slug: 'before-the-hang' });
    expect((await service.list()).status).toBe(200);

    pooler.pause();
    const hungAt = performance.now();
    const firstAnswerMs = await expectUnavailable(service, hungAt, 'timeout');
    // Ended by the 1.5 s deadline, not by the default one (10 s), the 30 s connect timeout or TCP's:
    // a generous margin for a busy machine (measured about 2.5 s on two cores).
    expect(firstAnswerMs).toBeLessThan(6000);

    await eventually(async () => (logged.some((msg) => msg.startsWith('the database server does not answer')) ? true : undefined));
    expect((await service.list()).status).toBe(503);

    pooler.resume();
    const recoveredMs = await expectRecovered(service, performance.now(), [workspace.id]);
    console.info(`hung pooler: first 503 after ${firstAnswerMs} ms, 200 again ${recoveredMs} ms after resuming`);
  });
});

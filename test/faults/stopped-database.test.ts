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
import { expectRecovered, expectUnavailable, finishedJob, heldEmbedder, postgresAvailable, startFaultService, startPrivateServer, type FaultService, type PrivateServer } from './support.ts';

describe.skipIf(!postgresAvailable)('a stopped database (immediate stop, then started again)', () => {
  let pg: PrivateServer;
  let service: FaultService;
  // The job's AI call waits for the test: the job is running, between its transactions, when the server breaks.
  const embedding = heldEmbedder();

  beforeAll(async () => {
    pg = await startPrivateServer();
    service = await startFaultService(pg, 'stopped', embedding.ai);
  }, 120_000);
  afterAll(async () => {
    embedding.release.open();
    await service?.close();
    await pg?.close();
  });

  it('answers 503 while the server is down and recovers alone once it is back; nothing committed is lost', { timeout: 90_000 }, async () => {
    const { org, list, client } = service;
    const workspace = await client().workspaces.create({ organizationId: org, name: 'Before the stop', slug: 'before-the-stop' });
    const job = await client().jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: ['kept through the stop'] } });
    await embedding.started.wait();

    await pg.stopNow();
    const stoppedAt = performance.now();
    embedding.release.open(); // the worker now writes the job's result into a server that is gone

    const firstAnswerMs = await expectUnavailable(service, stoppedAt, 'unreachable');
    expect((await list()).status).toBe(503);

    await pg.startAgain();
    const recoveredMs = await expectRecovered(service, performance.now(), [workspace.id]);

    expect(await finishedJob(service, job.id)).toMatchObject({ status: 'succeeded', result: { model: 'fault-test' } });
    console.info(`stopped database: first 503 after ${firstAnswerMs} ms, 200 again ${recoveredMs} ms after the server was back; job runs: ${embedding.calls()}`);
  });
});

/**
 * A hung database: its processes stopped (SIGSTOP), its connections open, so nothing answers and no
 * server-side timeout fires. With a client deadline of 1.5 s the service answers 503
 * SERVICE_UNAVAILABLE instead of hanging (the test's timeout would catch a hang), /readyz says
 * 503, the stuck connections are dropped, and once the server runs again (SIGCONT) the same calls
 * answer 200 with nothing restarted, and a job that was running when the server hung finishes
 * (src/db/deadline.ts, src/db/connection-watch.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, expectRecovered, expectUnavailable, finishedJob, heldEmbedder, postgresAvailable, startFaultService, startPrivateServer, type FaultService, type PrivateServer } from './support.ts';

describe.skipIf(!postgresAvailable)('a hung database (processes stopped, connections open)', () => {
  let pg: PrivateServer;
  // A client deadline of 1.5 s (startFaultService).
  let service: FaultService;
  const logged: string[] = [];
  // The job's AI call waits for the test: the job is running, between its transactions, when the server breaks.
  const embedding = heldEmbedder();

  beforeAll(async () => {
    pg = await startPrivateServer();
    const log = (_: object, msg?: string) => void logged.push(msg ?? '');
    service = await startFaultService(pg, 'hung', embedding.ai, { info: log, warn: log });
  }, 120_000);
  afterAll(async () => {
    embedding.release.open();
    pg?.resume();
    await service?.close();
    await pg?.close();
  });

  it('answers 503 while the server hangs, drops the stuck connections, and recovers alone; the running job finishes', { timeout: 90_000 }, async () => {
    const { org, list, client } = service;
    const workspace = await client().workspaces.create({ organizationId: org, name: 'Before the hang', slug: 'before-the-hang' });
    const job = await client().jobs.create({ organizationId: org, kind: 'text.embed', input: { texts: ['kept through the hang'] } });
    await embedding.started.wait();
    expect((await list()).status).toBe(200);

    pg.pause();
    const hungAt = performance.now();
    embedding.release.open(); // the worker now writes the job's result into the hung server

    const firstAnswerMs = await expectUnavailable(service, hungAt, 'timeout');

    // The pool finds its connections unanswered and the server silent to a fresh one: it drops them.
    await eventually(async () => (logged.some((msg) => msg.startsWith('the database server does not answer')) ? true : undefined));
    const droppedMs = Math.round(performance.now() - hungAt);
    // Still hung: the new connections wait in their start-up, and calls still end by the deadline.
    expect((await list()).status).toBe(503);

    pg.resume();
    const recoveredMs = await expectRecovered(service, performance.now(), [workspace.id]);

    // Its first run could not record its result; the queue runs it again, and it succeeds.
    expect(await finishedJob(service, job.id)).toMatchObject({ status: 'succeeded', result: { model: 'fault-test' } });
    expect(embedding.calls()).toBeGreaterThanOrEqual(1);
    console.info(`hung database: first 503 after ${firstAnswerMs} ms, connections dropped after ${droppedMs} ms, 200 again ${recoveredMs} ms after resuming; job runs: ${embedding.calls()}`);
  });
});

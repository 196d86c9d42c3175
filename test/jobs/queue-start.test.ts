/**
 * The queue starts behind the service (src/jobs/queue.ts, Starting): `openJobQueue` answers at
 * once, `started` says when pg-boss can take jobs. Enqueueing before then is refused rather than
 * awaited (inside a transaction on the embedded database the wait would never end); a queue that
 * cannot start says so through `started`, and still stops. Both databases.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { ApiError } from '../../src/contract/errors.ts';
import { jobEventBus } from '../../src/jobs/event-bus.ts';
import { jobLifecycle } from '../../src/jobs/lifecycle.ts';
import { openJobQueue, QUEUE_SCHEMA } from '../../src/jobs/queue.ts';
import { createLogger } from '../../src/logger.ts';
import { createTestDatabase } from '../support/database.ts';

const logger = createLogger('silent');

describe('a queue opened while pg-boss starts', () => {
  let db: Database;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.close());

  it("refuses a job before it has started, then takes it in the caller's transaction", async () => {
    const queue = openJobQueue({ db, settings: { leaseSeconds: 60 }, logger, worker: false });
    try {
      // Called before anything awaited: pg-boss's start cannot have run a statement yet.
      await expect(queue.enqueue(db.sql, 'job_too_early')).rejects.toThrow(/before the queue started/);
      await queue.started;
      await db.sql.begin((tx) => queue.enqueue(tx, 'job_on_time'));
      const rows = await db.sql<{ jobId: string }[]>`
        select data ->> 'jobId' as "jobId" from ${db.sql(QUEUE_SCHEMA)}.job where name = 'jobs' and data ->> 'jobId' in ('job_too_early', 'job_on_time')`;
      expect(rows).toEqual([{ jobId: 'job_on_time' }]);
    } finally {
      await queue.stop(0);
    }
  });

  it('stops cleanly when stopped while still starting', async () => {
    const queue = openJobQueue({ db, settings: { leaseSeconds: 60 }, logger, worker: true });
    await queue.stop(0);
    await expect(queue.started).resolves.toBeUndefined();
  });
});

describe('a queue that cannot start', () => {
  // Its own database: pg-boss's schema is broken on purpose.
  let db: Database;
  beforeAll(async () => {
    db = await createTestDatabase({ fresh: true });
    await db.sql`drop table ${db.sql(QUEUE_SCHEMA)}.queue cascade`;
  });
  afterAll(() => db?.close());

  it('rejects `started` with the reason, refuses jobs, starts no worker, and still stops', async () => {
    const queue = openJobQueue({ db, settings: { leaseSeconds: 60 }, logger, worker: true });
    await expect(queue.started).rejects.toThrow(/queue/);
    await expect(db.sql.begin((tx) => queue.enqueue(tx, 'job_never'))).rejects.toThrow(/before the queue started/);
    await expect(queue.work(async () => undefined, 1)).rejects.toThrow(/queue/);
    // jobs.create answers 503, a dependency down, not a 500.
    const jobs = jobLifecycle({ sql: db.sql, queue, events: jobEventBus() });
    const job = { organizationId: 'org_x', workspaceId: null, documentId: null, kind: 'document.index', input: {}, createdBy: null, retryOf: null, credits: 0 } as const;
    const refused = await jobs.create(job, { now: new Date(), plan: null }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503 });
    await queue.stop(0);
  });
});

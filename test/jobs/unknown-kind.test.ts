/**
 * A mixed fleet during an upgrade (docs/deploying.md, Upgrading): a newer release's API may queue a
 * job of a kind this release's workers do not know. Such a job is neither run nor failed here: it
 * goes back to the queue, in its place, for a newer worker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobKind } from '../../src/jobs/store.ts';
import { QUEUE_SCHEMA } from '../../src/jobs/queue.ts';
import { UNKNOWN_KIND_DEFER_SECONDS } from '../../src/jobs/worker.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { tenant, type Tenant } from './support.ts';

describe('a job of a kind this release does not know', () => {
  let server: TestServer;
  let t: Tenant;
  beforeAll(async () => {
    server = await startTestServer();
    t = await tenant(server);
    // The newer release's migration would widen the check; this database plays that part.
    await server.db.sql`alter table jobs drop constraint jobs_kind_check`;
  });
  afterAll(() => server?.close());

  it('stays queued, neither run nor failed, and is offered again later', async () => {
    const created = await server.services.jobs.create(
      { organizationId: t.org, workspaceId: t.workspaceId, documentId: null, kind: 'workspace.future' as JobKind, input: {}, createdBy: t.owner.id, retryOf: null, credits: 0 },
      { now: new Date(), plan: null },
    );
    // The first send is itself a created row that starts now; the worker's defer adds a second, later
    // one. Wait for that one (the first may still be waiting for a worker when this looks).
    const deferred = () => server.db.sql<{ seconds: number }[]>`
      select extract(epoch from start_after - now())::float8 as seconds from ${server.db.sql(QUEUE_SCHEMA)}.job
      where data->>'jobId' = ${created.id} and state = 'created' and start_after > now() + interval '1 second'`;
    await expect.poll(async () => (await deferred()).length, { timeout: 10_000 }).toBe(1);
    expect((await deferred())[0]!.seconds).toBeGreaterThan(UNKNOWN_KIND_DEFER_SECONDS - 5);
    // Read from the table: this release's response validation (outside production) would refuse the
    // unknown kind. The row goes back to queued just after the job is sent again.
    await expect.poll(async () => (await server.db.sql`select status, error_message from jobs where id = ${created.id}`)[0], { timeout: 10_000 }).toEqual({ status: 'queued', error_message: null });
  });
});

/**
 * An idempotent request whose COMMIT outlives its deadline (docs/idempotency.md, "When the answer
 * is lost"): the request has already been told 503, but the work may still commit. The key must
 * not be given back before the outcome is known, or the retry creates (and charges) a second job.
 *
 * The COMMIT is made slow for real: a deferred constraint trigger on `jobs` sleeps at COMMIT time
 * (once, when slowNextCommit asked), past the 1 s deadline jobs.create gets here; with
 * `fail` it then raises, so that COMMIT fails instead. Runs on the embedded database and, with
 * `scripts/test-pg.sh`, on PostgreSQL (where the outcome is read back on another connection while
 * the COMMIT is still under way).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Handlers } from '../../src/context.ts';
import { withDeadline } from '../../src/db/deadline.ts';
import { jobProcedures } from '../../src/jobs/procedures.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { call, newKey, slug } from './support.ts';

const DEADLINE_MS = 1000;
/** The COMMIT's sleep: well past the deadline, well within the read-back's own (DB_DEADLINE_MS, 10 s). */
const COMMIT_MS = 2500;

// jobs.create as the binding layer runs it, with a deadline of DEADLINE_MS on its database calls.
const handlers: Handlers = {
  'jobs.create': (input, ctx) => withDeadline(DEADLINE_MS, () => jobProcedures['jobs.create'](input, ctx)),
};

let server: TestServer;
let owner: TestUser;
let org: string;

beforeAll(async () => {
  server = await startTestServer({
    aiService: false,
    env: { RATE_LIMIT_PER_MINUTE: '100000', WORKER: 'off', AI_URL: 'http://127.0.0.1:9' },
    overrides: { handlers },
  });
  owner = await createUser(server.db);
  org = await addMembership(server.db, owner, 'owner');
  // Sequences, not a table: setval is not rolled back with a COMMIT that fails, so the delay is used once.
  await server.db.sql.unsafe(`
    create sequence commit_delay_ms minvalue 0 start 0;
    create sequence commit_fails minvalue 0 start 0;
    create function delay_commit() returns trigger language plpgsql as $$
    declare delay bigint := (select last_value from commit_delay_ms);
    begin
      if delay > 0 then
        perform setval('commit_delay_ms', 0);
        perform pg_sleep(delay / 1000.0);
        if (select last_value from commit_fails) > 0 then
          perform setval('commit_fails', 0);
          raise exception 'commit refused for the test';
        end if;
      end if;
      return null;
    end $$;
    create constraint trigger jobs_delay_commit after insert on jobs deferrable initially deferred
      for each row execute function delay_commit();
  `);
}, 60_000);
afterAll(() => server?.close());

/** The next COMMIT that inserts a job sleeps COMMIT_MS, then commits or (`fail`) raises. */
async function slowNextCommit(o: { fail: boolean }): Promise<void> {
  await server.db.sql`select setval('commit_delay_ms', ${COMMIT_MS}), setval('commit_fails', ${o.fail ? 1 : 0})`;
}

async function counts(texts: string[]): Promise<{ jobs: number; charges: number }> {
  const [row] = await server.db.sql<{ jobs: number; charges: number }[]>`
    select count(*)::int as jobs, count(l.id)::int as charges
    from jobs j left join credit_ledger l on l.job_id = j.id and l.amount > 0
    where j.organization_id = ${org} and j.input = ${server.db.sql.json({ texts })}`;
  return row!;
}

describe('a COMMIT that outlives its deadline', () => {
  it('that commits: one job and one charge; the first answer and the retry say the work was done', async () => {
    const texts = [slug('slow-commit')];
    const input = { organizationId: org, kind: 'text.embed', input: { texts } };
    const key = newKey();
    await slowNextCommit({ fail: false });
    const first = await call(server, 'rest', 'jobs.create', input, { key, headers: owner.headers });
    expect(await counts(texts)).toEqual({ jobs: 1, charges: 1 });
    const retry = await call(server, 'rpc', 'jobs.create', input, { key, headers: owner.headers });
    expect(await counts(texts)).toEqual({ jobs: 1, charges: 1 });

    // Neither says "try again" (503), which would invite a new key, nor hands the key back.
    expect([first.status, first.body.code]).toEqual([409, 'CONFLICT']);
    expect(first.body.message).toMatch(/was done, but its answer was lost/);
    expect([retry.status, retry.replayed, retry.text]).toEqual([409, 'true', first.text]);
  }, 30_000);

  it('that fails: the key is given back once the COMMIT has failed, and the retry makes the one job', async () => {
    const texts = [slug('failed-commit')];
    const input = { organizationId: org, kind: 'text.embed', input: { texts } };
    const key = newKey();
    await slowNextCommit({ fail: true });
    const first = await call(server, 'rest', 'jobs.create', input, { key, headers: owner.headers });
    expect([first.status, first.body.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    expect(await counts(texts)).toEqual({ jobs: 0, charges: 0 });
    const retry = await call(server, 'rest', 'jobs.create', input, { key, headers: owner.headers });
    expect([retry.status, retry.replayed]).toEqual([200, null]);
    expect(await counts(texts)).toEqual({ jobs: 1, charges: 1 });
  }, 30_000);

  it('a quick COMMIT is unchanged: the answer is kept and replayed', async () => {
    const texts = [slug('quick-commit')];
    const input = { organizationId: org, kind: 'text.embed', input: { texts } };
    const key = newKey();
    const first = await call(server, 'rest', 'jobs.create', input, { key, headers: owner.headers });
    const retry = await call(server, 'rest', 'jobs.create', input, { key, headers: owner.headers });
    expect([first.status, retry.status, retry.replayed, retry.text]).toEqual([200, 200, 'true', first.text]);
    expect(await counts(texts)).toEqual({ jobs: 1, charges: 1 });
  });
});

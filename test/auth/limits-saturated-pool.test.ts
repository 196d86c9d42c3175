/**
 * Identity limits hold while the API's database pool is saturated (issue 23): every connection of
 * the pool is held by a sleeping statement, so each limiter's hit waits out its one-second
 * deadline uncounted in PostgreSQL. The hits are counted in the process instead
 * (src/auth/shared-rate-limit.ts): past the budget, sign-in and password reset answer 429, where
 * they were let through to the password check before. Real PostgreSQL only
 * (`scripts/test-pg.sh test/auth/limits-saturated-pool.test.ts`); the embedded database counts in
 * memory anyway.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/connection.ts';
import { NO_DEADLINE, withDeadline } from '../../src/db/deadline.ts';
import { externalDatabaseUrl, openSecondClient } from '../support/database.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { createUser, TEST_PASSWORD, type TestUser } from '../support/users.ts';

/** The pool size of a database server's client (src/db/connection.ts). */
const POOL = 10;

describe.skipIf(!externalDatabaseUrl)('identity limits while the pool is saturated', () => {
  let server: TestServer;
  /** Another client on the same database, outside the saturated pool: to watch and end the sleepers. */
  let watcher: Database;
  let user: TestUser;
  let sleepers: Promise<unknown>[] = [];

  beforeAll(async () => {
    // One sensitive request a minute per address: the second is refused.
    server = await startTestServer({ env: { TRUST_PROXY: 'true', AUTH_RATE_LIMIT_PER_MINUTE: '1', EMAIL_PROVIDER: 'log' } });
    watcher = await openSecondClient(server.db);
    user = await createUser(server.db);
  }, 60_000);
  afterAll(async () => {
    if (watcher) await watcher.sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query like '%pg_sleep(120)%' and pid <> pg_backend_pid()`.catch(() => {});
    await Promise.allSettled(sleepers);
    await watcher?.close();
    await server?.close();
  });

  const sleeping = async () => {
    const [row] = await watcher.sql<{ count: number }[]>`
      select count(*)::int as count from pg_stat_activity
      where datname = current_database() and query like '%pg_sleep(120)%' and state = 'active' and pid <> pg_backend_pid()`;
    return row!.count;
  };

  const post = (path: string, from: string, body: object) =>
    server.fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
      body: JSON.stringify(body),
    });

  it('refuses sign-in and password reset past their budget, though no hit reaches the database', { timeout: 120_000 }, async () => {
    // Every connection of the API's pool sleeps (in a transaction, past the 8-s statement timeout of the pool's sessions).
    sleepers = Array.from({ length: POOL }, () =>
      withDeadline(NO_DEADLINE, () =>
        server.db.sql.begin(async (tx) => {
          await tx`set local statement_timeout = 0`;
          await tx`select pg_sleep(120)`;
        }),
      ).catch(() => {}),
    );
    for (let i = 0; i < 100 && (await sleeping()) < POOL; i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await sleeping()).toBe(POOL);

    // Sign-in: the first attempt is let through to the handler (which cannot read the user: 503);
    // the next ones are refused by the limiters, counted in this process.
    const signIn = (from: string) => post('/api/auth/sign-in/email', from, { email: user.email, password: TEST_PASSWORD });
    expect((await signIn('203.0.113.1')).status).toBe(503);
    for (let i = 0; i < 2; i += 1) {
      const refused = await signIn('203.0.113.1');
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({ code: 'TOO_MANY_REQUESTS', message: 'Too many attempts, try again in a minute.' });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }

    // Password reset, from another address: the same.
    const reset = () => post('/api/auth/request-password-reset', '203.0.113.2', { email: user.email });
    expect((await reset()).status).toBe(503);
    expect((await reset()).status).toBe(429);
    expect((await reset()).status).toBe(429);

    // The pool was saturated all along (nothing dropped the sleeping connections).
    expect(await sleeping()).toBe(POOL);
    expect(server.logs.some((line) => line.msg === "rate limit not counted in the database: this process's count decides" && line.limiter === 'identity.sensitive')).toBe(true);
  });
});

/**
 * The connection budget behind a transaction pooler: three `api` processes and two `worker`
 * processes (TEST_API_INSTANCES, TEST_WORKERS) on a PgBouncer whose pool for the database is four
 * server connections. Under a burst of requests and jobs, the instances hold many more client
 * connections to the pooler than that, yet the server (counted in pg_stat_activity through the
 * direct address) never holds more than the pool's four for them; the direct address carries only
 * what needs a session (LISTEN, migrations at start), within the budget docs/deploying.md gives.
 * The pooler reaches the server over its unix socket, so its connections are the ones without a
 * client address.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAiService } from '../../src/ai-service/server.ts';
import { loadConfig } from '../../src/config.ts';
import type { Database } from '../../src/db/connection.ts';
import { createLogger } from '../../src/logger.ts';
import { apiInstances, workerProcesses } from '../concurrency/support.ts';
import { createTestDatabase, databaseUrlOf, externalDatabaseUrl } from '../support/database.ts';
import { spawnService, type ServiceProcess } from '../support/processes.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';
import { poolerAvailable, startPooler, type PrivatePooler } from './support.ts';

const POOL = 4;
const socketDir = process.env.TEST_DATABASE_SOCKET_DIR;

interface Counts {
  pooled: number;
  direct: number;
}

describe.skipIf(!poolerAvailable || !socketDir)('the server connections of many instances behind a transaction pooler', () => {
  const apis = apiInstances(3);
  const workers = workerProcesses(2);
  let pooler: PrivatePooler;
  let db: Database;
  let ai: Awaited<ReturnType<typeof startAiService>>;
  let admin: postgres.Sql;
  let name: string;
  const processes: ServiceProcess[] = [];
  const origins: string[] = [];
  let user: TestUser;
  let org: string;

  beforeAll(async () => {
    pooler = await startPooler(externalDatabaseUrl!, { poolSize: POOL, socketDir: socketDir! });
    db = await createTestDatabase({ poolerUrl: pooler.url });
    const url = databaseUrlOf(db)!;
    name = new URL(url).pathname.slice(1);
    admin = postgres(externalDatabaseUrl!, { max: 1, onnotice: () => {} });
    ai = await startAiService({ settings: loadConfig({}).ai, host: '127.0.0.1', port: 0, logger: createLogger('silent') });
    const env = { DATABASE_URL: url, AI_URL: ai.url, SECRET: 'pooler-budget-secret-pooler-budget!!', RATE_LIMIT_PER_MINUTE: '100000' };
    const started = [
      ...Array.from({ length: apis }, () => spawnService('api', { ...env, WORKER: 'off' })),
      ...Array.from({ length: workers }, () => spawnService('worker', { ...env, WORKER_CONCURRENCY: '4' })),
    ];
    processes.push(...started);
    for (const api of started.slice(0, apis)) origins.push(`http://127.0.0.1:${(await api.logged('listening')).port as number}`);
    for (const worker of started.slice(apis)) await worker.logged('job worker started');
    user = await createUser(db);
    org = await addMembership(db, user, 'owner');
  }, 120_000);
  afterAll(async () => {
    for (const process of processes) await process.stop();
    await ai?.close();
    await db?.close();
    await admin?.end();
    await pooler?.close();
  });

  const counts = async (): Promise<Counts> => {
    const [row] = await admin<{ pooled: number; direct: number }[]>`
      select count(*) filter (where client_addr is null)::int as pooled, count(*) filter (where client_addr is not null)::int as direct
      from pg_stat_activity where datname = ${name} and backend_type = 'client backend'`;
    return row!;
  };
  const request = (origin: string, path: string, body?: object) =>
    fetch(`${origin}/api/v1${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { ...user.headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });

  it('never exceeds the pool on the server, however many client connections the instances hold', { timeout: 120_000 }, async () => {
    const seen: Counts[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) seen.push(await counts());
    })();

    const jobIds: string[] = [];
    for (let round = 0; round < 3; round++) {
      const calls = origins.flatMap((origin, i) =>
        Array.from({ length: 20 }, (_, k) => {
          const n = `${round}-${i}-${k}`;
          if (k % 4 === 0) return { job: true, answer: request(origin, '/jobs', { organizationId: org, kind: 'text.embed', input: { texts: [`text ${n}`] } }) };
          if (k % 4 === 1) return { job: false, answer: request(origin, '/workspaces', { organizationId: org, name: `Workspace ${n}`, slug: `workspace-${n}` }) };
          return { job: false, answer: request(origin, `/workspaces?organizationId=${org}`) };
        }),
      );
      for (const call of calls) {
        const response = await call.answer;
        expect(response.status).toBe(200);
        const body = (await response.json()) as { id: string };
        if (call.job) jobIds.push(body.id);
      }
    }
    // Every job runs to its end through the pooler.
    expect(jobIds).toHaveLength(3 * apis * 5);
    for (const id of jobIds) {
      for (;;) {
        const job = (await (await request(origins[0]!, `/jobs/${id}`)).json()) as { status: string };
        if (job.status === 'succeeded') break;
        expect(['queued', 'running']).toContain(job.status);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    sampling = false;
    await sampler;

    // The demand: the instances' client connections to the pooler, many more than its pool.
    const adminConsole = postgres(pooler.urlOf('pgbouncer'), { max: 1, prepare: false, fetch_types: false, onnotice: () => {} });
    let clients: number;
    try {
      clients = (await adminConsole.unsafe<{ database: string }[]>('SHOW CLIENTS')).filter((row) => row.database === name).length;
    } finally {
      await adminConsole.end();
    }
    expect(clients).toBeGreaterThan(POOL);

    const maxPooled = Math.max(...seen.map((count) => count.pooled));
    const maxDirect = Math.max(...seen.map((count) => count.direct));
    expect(maxPooled).toBeGreaterThan(0);
    expect(maxPooled).toBeLessThanOrEqual(POOL);
    // Session work only: a LISTEN connection per process (a second, pg-boss's, per worker) and the
    // migrations' one, closed after start (docs/deploying.md, "Connections: the budget").
    expect(maxDirect).toBeLessThanOrEqual(2 * apis + 3 * workers);
    process.stdout.write(
      `pooler budget: ${apis} api + ${workers} worker processes, ${clients} client connections to the pooler, at most ${maxPooled} pooled and ${maxDirect} direct server connections over ${seen.length} samples\n`,
    );
  });
});

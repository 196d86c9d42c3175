/**
 * Fault tests against a private PostgreSQL 15 server with pgvector, one per test file: started by
 * scripts/pg-server.sh with synchronous_commit on (a commit the server confirmed survives an
 * immediate stop; the shared `make test-pg` server runs with it off), then
 * - paused and resumed: SIGSTOP and SIGCONT to the postmaster and all its children, so every
 *   connection stays open and nothing answers (a hung server, which no server-side timeout ends);
 * - stopped at once (`pg_ctl stop -m immediate`, a crash) and started again on the same port and
 *   data directory.
 * Files skip when PostgreSQL 15 or pgvector is missing (`make test-pg` installs both).
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { createClient } from '../../clients/typescript/src/index.ts';
import type { AiClient } from '../../src/ai-service/client.ts';
import { openDatabase, type Database, type DatabaseLogger } from '../../src/db/connection.ts';
import { createMigratedDatabase } from '../support/migrated-database.ts';
import { clientFetch, startTestServer, type TestServer } from '../support/server.ts';
import { addMembership, createUser, type TestUser } from '../support/users.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const PG_BIN = '/usr/lib/postgresql/15/bin';

/** PostgreSQL 15 and pgvector are installed (what scripts/pg-server.sh install provides). */
export const postgresAvailable: boolean = (() => {
  try {
    if (!existsSync(join(PG_BIN, 'postgres'))) return false;
    const dir = (flag: string) => execFileSync(join(PG_BIN, 'pg_config'), [flag], { encoding: 'utf8' }).trim();
    return existsSync(join(dir('--sharedir'), 'extension', 'vector.control')) && existsSync(join(dir('--pkglibdir'), 'vector.so'));
  } catch {
    return false;
  }
})();

export interface PrivateServer {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  /** Stops the postmaster and every child process (SIGSTOP): connections stay open, nothing answers. */
  pause(): void;
  /** Lets them run again (SIGCONT). */
  resume(): void;
  /** `pg_ctl stop -m immediate`: every process ends at once, as in a crash; the data directory stays. */
  stopNow(): Promise<void>;
  /** Starts the stopped server again: same port, same data directory, same settings (crash recovery first). */
  startAgain(): Promise<void>;
  /** A new database on the server, migrated, with pg-boss's schema: answers its URL. */
  createDatabase(name: string): Promise<string>;
  /** Resumes it if paused, stops it and deletes its directory. */
  close(): Promise<void>;
}

export async function startPrivateServer(): Promise<PrivateServer> {
  const dir = await mkdtemp(join(tmpdir(), 'workspace-api-faults-'));
  const { stdout } = await run(join(root, 'scripts/pg-server.sh'), ['start', dir], {
    cwd: root,
    env: { ...process.env, PG_SYNCHRONOUS_COMMIT: 'on' },
  });
  const url = stdout.trim();
  const dataDir = join(dir, 'data');
  let paused: number[] = [];

  // PostgreSQL refuses to run as root; scripts/pg-server.sh runs it as `postgres` then.
  const pgCtl = (args: string[]) => {
    const command = [join(PG_BIN, 'pg_ctl'), '-D', dataDir, ...args];
    return process.getuid?.() === 0 ? run('runuser', ['-u', 'postgres', '--', ...command]) : run(command[0]!, command.slice(1));
  };

  const server: PrivateServer = {
    url,
    pause() {
      const postmaster = postmasterPid(dataDir);
      // The postmaster first, so it starts no process the sweep below would miss.
      process.kill(postmaster, 'SIGSTOP');
      paused = [postmaster, ...childrenOf(postmaster)];
      for (const pid of paused.slice(1)) process.kill(pid, 'SIGSTOP');
    },
    resume() {
      for (const pid of paused.toReversed()) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // already gone
        }
      }
      paused = [];
    },
    async stopNow() {
      await pgCtl(['stop', '-m', 'immediate', '-w', '-s']);
    },
    async startAgain() {
      // Without a running server, `restart` starts it with the options of its last start (postmaster.opts).
      await pgCtl(['restart', '-w', '-t', '60', '-s', '-l', join(dir, 'server.log')]).catch((error: unknown) => {
        // It says the PID file is missing ("trying to start server anyway") and exits 0; anything else failed.
        const { stderr } = error as { stderr?: string };
        throw new Error(`the server did not start again: ${stderr ?? String(error)}`, { cause: error });
      });
    },
    createDatabase: (name) => createMigratedDatabase(url, name),
    async close() {
      server.resume();
      await run(join(root, 'scripts/pg-server.sh'), ['stop', dir], { cwd: root });
    },
  };
  return server;
}

/** The first line of postmaster.pid. */
function postmasterPid(dataDir: string): number {
  const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no postmaster pid in ${dataDir}/postmaster.pid`);
  return pid;
}

/** Every process whose parent is `pid`, from /proc/<pid>/stat (field 4, after the parenthesised name). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === pid) children.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return children;
}

/** Polls `check` every `everyMs` until it answers something other than undefined; the test's timeout bounds it. */
export async function eventually<T>(check: () => Promise<T | undefined>, everyMs = 200): Promise<T> {
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** A gate a test opens once: `wait()` resolves after `open()`. */
export function gate(): { wait(): Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { wait: () => opened, open };
}

/**
 * A stand-in AI client whose embedding waits for the test: `started` opens when a job's call
 * arrives, and the call answers once the test opens `release`, so the job is running, between its
 * transactions, when the test breaks the database.
 */
export function heldEmbedder(): { ai: AiClient; started: ReturnType<typeof gate>; release: ReturnType<typeof gate>; calls(): number } {
  const started = gate();
  const release = gate();
  let calls = 0;
  const ai: AiClient = {
    async embed(texts) {
      calls += 1;
      started.open();
      await release.wait();
      return { model: 'fault-test', vectors: texts.map(() => Array.from({ length: 384 }, () => 0.5)) };
    },
    extract: () => Promise.reject(new Error('not used')),
    health: () => Promise.reject(new Error('not used')),
  };
  return { ai, started, release, calls: () => calls };
}

/** Calls `call` until it answers 200 (the service recovered); the test's timeout bounds it. */
export function answersAgain(call: () => Promise<Response>): Promise<Response> {
  return eventually(async () => {
    const response = await call();
    return response.status === 200 ? response : undefined;
  });
}

/** The service a database fault test breaks the database of, and the calls it makes. */
export interface FaultService {
  db: Database;
  server: TestServer;
  /** The owner of `org`. */
  user: TestUser;
  org: string;
  /** GET /api/v1/workspaces of `org`, as `user`: a database-backed call. */
  list(): Promise<Response>;
  /** GET /readyz. */
  ready(): Promise<Response>;
  /** The typed client, as `user`. */
  client(): ReturnType<typeof createClient>;
  /** Closes the server, then its database client. */
  close(): Promise<void>;
}

/**
 * A test server on a new database `name` of the private server: a client deadline of 1.5 s and a
 * statement timeout of 1 s, `ai` as its AI client, JOB_LEASE_SECONDS at its minimum (10: should the
 * queue fail to record a run's end, it hands the job out again soon) with a fast retry and poll;
 * and an owner of an organization.
 */
export async function startFaultService(pg: PrivateServer, name: string, ai: AiClient, logger?: DatabaseLogger): Promise<FaultService> {
  const url = await pg.createDatabase(name);
  const db = await openDatabase({ databaseUrl: url, dataDir: '/nonexistent', deadlineMs: 1500, statementTimeoutMs: 1000, ...(logger ? { logger } : {}) });
  let server: TestServer | undefined;
  let user: TestUser;
  let org: string;
  try {
    server = await startTestServer({ db, aiService: false, env: { JOB_LEASE_SECONDS: '10' }, overrides: { ai, queue: { retryDelaySeconds: 1, pollingSeconds: 0.5 } } });
    user = await createUser(db);
    org = await addMembership(db, user, 'owner');
  } catch (error) {
    await server?.close();
    await db.close();
    throw error;
  }
  const started = server;
  return {
    db,
    server: started,
    user,
    org,
    list: () => fetch(`${started.origin}/api/v1/workspaces?organizationId=${org}`, { headers: user.headers }),
    ready: () => fetch(`${started.origin}/readyz`),
    client: () => createClient({ baseUrl: started.origin, token: user.token, fetch: clientFetch(started) }),
    async close() {
      await started.close();
      await db.close();
    },
  };
}

/**
 * The database is away: a database-backed call answers 503 SERVICE_UNAVAILABLE, as declared by
 * every such operation, with when to ask again, and /readyz answers 503 with `database` as its
 * check. Answers how long the first call took from `since` (performance.now()).
 */
export async function expectUnavailable(service: FaultService, since: number, database: 'timeout' | 'unreachable'): Promise<number> {
  const refused = await service.list();
  const firstAnswerMs = Math.round(performance.now() - since);
  expect(refused.status).toBe(503);
  expect(await refused.json()).toEqual({ defined: true, code: 'SERVICE_UNAVAILABLE', status: 503, message: 'The service is temporarily unavailable, try again later.' });
  expect(refused.headers.get('retry-after')).toBe('5');
  const readiness = await service.ready();
  expect(readiness.status).toBe(503);
  expect(await readiness.json()).toEqual({ status: 'unavailable', checks: { database } });
  return firstAnswerMs;
}

/**
 * The service answers 200 again (waiting for it) with the workspaces that were there before the
 * fault, and /readyz says 200. Answers how long that took from `since` (performance.now()).
 */
export async function expectRecovered(service: FaultService, since: number, workspaceIds: string[]): Promise<number> {
  const recovered = await answersAgain(service.list);
  const recoveredMs = Math.round(performance.now() - since);
  expect(((await recovered.json()) as { id: string }[]).map((item) => item.id)).toEqual(workspaceIds);
  expect((await service.ready()).status).toBe(200);
  return recoveredMs;
}

/** Polls the job (every 300 ms) until it has finished: succeeded, failed or canceled. */
export function finishedJob(service: FaultService, id: string) {
  return eventually(async () => {
    const current = await service.client().jobs.get({ id });
    return ['succeeded', 'failed', 'canceled'].includes(current.status) ? current : undefined;
  }, 300);
}

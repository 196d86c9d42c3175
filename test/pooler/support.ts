/**
 * A private PgBouncer (scripts/pgbouncer.sh: transaction mode, its own port and directory) for the
 * pooler tests, which need one nobody else uses: one they stop (SIGSTOP), one with a pool small
 * enough that the instances' demand exceeds it. The tests run where `make test-pooler` runs them
 * (TEST_POOLER_URL set: PostgreSQL 15 and PgBouncer are installed) and skip elsewhere.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { poolerUrl } from '../support/database.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

/** The pooler environment of `make test-pooler` is there. */
export const poolerAvailable = poolerUrl !== undefined;

export interface PrivatePooler {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  /** `url` with another database name. */
  urlOf(database: string): string;
  /** SIGSTOP: its connections stay open and nothing answers (a hung pooler). */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** Stops it and deletes its directory. */
  close(): Promise<void>;
}

/**
 * PgBouncer in front of the server at `serverUrl`, with `poolSize` server connections per database;
 * through the server's unix socket in `socketDir` when given (its connections then have no client
 * address in pg_stat_activity).
 */
export async function startPooler(serverUrl: string, options: { poolSize: number; socketDir?: string }): Promise<PrivatePooler> {
  const dir = await mkdtemp(join(tmpdir(), 'workspace-api-pgbouncer-'));
  const { stdout } = await run(join(root, 'scripts/pgbouncer.sh'), ['start', dir, serverUrl, String(options.poolSize)], {
    cwd: root,
    env: { ...process.env, ...(options.socketDir ? { SERVER_SOCKET_DIR: options.socketDir } : {}) },
  });
  const url = stdout.trim();
  const pid = Number(readFileSync(join(dir, 'pgbouncer.pid'), 'utf8').trim());
  return {
    url,
    urlOf(database) {
      const target = new URL(url);
      target.pathname = `/${database}`;
      return target.toString();
    },
    pause: () => process.kill(pid, 'SIGSTOP'),
    resume: () => process.kill(pid, 'SIGCONT'),
    async close() {
      await run(join(root, 'scripts/pgbouncer.sh'), ['stop', dir], { cwd: root });
    },
  };
}

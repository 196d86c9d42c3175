/**
 * The processes under soak (bench/soak.ts): a throwaway PostgreSQL 15 (scripts/pg-server.sh, as
 * `make test-pg` starts it) and `node src/main.ts serve` on it as one machine runs it in
 * production, with its two children (the job worker, WORKER=process, and the AI service); or, with
 * SOAK_DATABASE=embedded, `serve` as `make start` runs it: no DATABASE_URL (PGlite in a thread of
 * serve, in a fresh DATA_DIR), the job worker inside serve (WORKER=inline), the AI service its one
 * child. Its JSON log lines are read from stdout (the children share it): error-level lines are
 * kept, warnings counted by kind.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { childrenOf } from './soak-sample.ts';
import { SERVICE_NODE_FLAGS } from '../src/process/node-flags.ts';
import { freePort } from '../test/support/ports.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const run = promisify(execFile);

export interface Postgres {
  url: string;
  /** The postmaster's pid (its backends are its children). */
  pid: number;
  stop(): Promise<void>;
}

/** A server in a new temporary directory; `stop` stops it and deletes the directory. */
export async function startPostgres(): Promise<Postgres> {
  const script = join(root, 'scripts/pg-server.sh');
  const dir = await mkdtemp(join(tmpdir(), 'workspace-api-soak-pg-'));
  const stop = async () => {
    await run(script, ['stop', dir]).catch(() => rm(dir, { recursive: true, force: true }));
  };
  try {
    const { stdout } = await run(script, ['start', dir], { maxBuffer: 1 << 20 });
    const pid = Number((await readFile(join(dir, 'data/postmaster.pid'), 'utf8')).split('\n')[0]);
    return { url: stdout.trim().split('\n').at(-1)!, pid, stop };
  } catch (error) {
    await stop();
    const said = String((error as { stderr?: string }).stderr ?? '').trim();
    throw new Error(`scripts/pg-server.sh start failed${said ? `: ${said.split('\n').at(-1)}` : ''}`, { cause: error });
  }
}

/**
 * SOAK_POOLER=pgbouncer: PgBouncer in transaction mode (scripts/pgbouncer.sh, as `make
 * test-pooler` starts it; a pool of 20 per database) in front of `serverUrl`, in a new temporary
 * directory. Answers the settings serve then takes: the pooler as DATABASE_URL, the server as
 * DATABASE_DIRECT_URL (docs/deploying.md, "Behind a connection pooler").
 */
export async function startPooler(serverUrl: string): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  const script = join(root, 'scripts/pgbouncer.sh');
  const dir = await mkdtemp(join(tmpdir(), 'workspace-api-soak-pgbouncer-'));
  const stop = async () => {
    await run(script, ['stop', dir]).catch(() => rm(dir, { recursive: true, force: true }));
  };
  try {
    const { stdout } = await run(script, ['start', dir, serverUrl], { maxBuffer: 1 << 20 });
    const url = stdout.trim().split('\n').at(-1)!;
    return { env: { DATABASE_URL: url, DATABASE_POOL_MODE: 'transaction', DATABASE_DIRECT_URL: serverUrl }, stop };
  } catch (error) {
    await stop();
    const said = String((error as { stderr?: string }).stderr ?? '').trim();
    throw new Error(`scripts/pgbouncer.sh start failed${said ? `: ${said.split('\n').at(-1)}` : ''}`, { cause: error });
  }
}

/** What the service logged at warn and above. */
export interface ServiceLog {
  /** Error-level lines (pino level >= 50), the first 50 as logged. */
  errors: Record<string, unknown>[];
  errorCount: number;
  /** Warnings by kind: the message, and for request lines the status, code and route. */
  warnings: Map<string, number>;
}

export interface Serve {
  url: string;
  pid: number;
  log: ServiceLog;
  /** Set once the process has exited (it should not before `stop`). */
  exit: { code: number | null; signal: string | null } | undefined;
  /** SIGTERM (it drains), then SIGKILL after 30 s; the exit code. Deletes its data directory. */
  stop(): Promise<number | null>;
}

/**
 * `node src/main.ts serve` on `databaseUrl` (undefined: the embedded database, with any
 * DATABASE_URL of the environment removed), a fresh DATA_DIR, a free port (PORT=0 would give a
 * PUBLIC_URL of port 0, and the signed upload addresses are built from PUBLIC_URL), AI_PORT=0;
 * resolves once /readyz answers 200 and the `children` (by their main.ts command) are running.
 */
export async function startServe(databaseUrl: string | undefined, env: Record<string, string>, children: readonly string[]): Promise<Serve> {
  const dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-soak-data-'));
  const port = await freePort();
  const childEnv: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(port), AI_PORT: '0', ...env };
  if (databaseUrl === undefined) delete childEnv.DATABASE_URL;
  else childEnv.DATABASE_URL = databaseUrl;
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, 'src/main.ts', 'serve'], {
    cwd: root,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: ServiceLog = { errors: [], errorCount: 0, warnings: new Map() };
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  createInterface({ input: child.stdout }).on('line', (line) => readLine(log, line));
  const closed = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  const serve: Serve = {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    log,
    exit: undefined,
    async stop() {
      if (!serve.exit) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await closed;
        clearTimeout(timer);
      }
      await rm(dataDir, { recursive: true, force: true });
      return serve.exit!.code;
    },
  };
  void closed.then(([code, signal]) => (serve.exit = { code, signal }));
  const deadline = performance.now() + 120_000;
  for (;;) {
    if (serve.exit) throw new Error(`serve exited (${serve.exit.code ?? serve.exit.signal}) during its start: ${stderr.trim() || JSON.stringify(log.errors.at(-1))}`);
    const ready = await fetch(`${serve.url}/readyz`).then(
      (response) => response.status === 200,
      () => false,
    );
    const running = await childrenOf(serve.pid);
    if (ready && children.every((command) => running[command])) return serve;
    if (performance.now() > deadline) {
      await serve.stop();
      throw new Error(`serve was not ready with its children (${children.join(', ')}) within 120 s (ready: ${ready}, children: ${JSON.stringify(running)})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function readLine(log: ServiceLog, line: string): void {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return;
  }
  const level = Number(entry.level);
  if (level >= 50) {
    log.errorCount++;
    if (log.errors.length < 50) log.errors.push(entry);
  } else if (level >= 40) {
    const kind =
      entry.msg === 'request'
        ? `request ${String(entry.status)} ${typeof entry.code === 'string' ? entry.code : ''} ${String(entry.path).replace(/\/[a-z]+_[a-z0-9]+(?=\/|$)/g, '/{id}')}`
        : String(entry.msg);
    log.warnings.set(kind, (log.warnings.get(kind) ?? 0) + 1);
  }
}

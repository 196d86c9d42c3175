/**
 * Service processes a test spawns (`node src/main.ts <command>`), with their JSON log lines
 * readable as they arrive. Killed (SIGKILL) by `stop()` when still running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { databaseEnvFor } from './database.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  entries: Record<string, unknown>[];
  /** The `nth` (1 by default) log entry with this message, waiting for it; rejects if the process exits first. */
  logged(msg: string, nth?: number): Promise<Record<string, unknown>>;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  stop(): Promise<void>;
}

/**
 * `env` is laid over this process's environment; `withoutDatabaseUrl` drops a DATABASE_URL it
 * inherits (`make test-pg` sets one), so the service runs on its embedded database. A DATABASE_URL
 * through the test pooler (`make test-pooler`) brings DATABASE_POOL_MODE and DATABASE_DIRECT_URL
 * along (database.ts, databaseEnvFor), unless `env` names them.
 */
export function spawnService(command: 'serve' | 'api' | 'worker' | 'ai', env: NodeJS.ProcessEnv, options: { withoutDatabaseUrl?: boolean } = {}): ServiceProcess {
  const database = env.DATABASE_URL ? databaseEnvFor(env.DATABASE_URL) : {};
  const fullEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', NODE_ENV: 'development', HOST: '127.0.0.1', PORT: '0', ...database, ...env };
  if (options.withoutDatabaseUrl) delete fullEnv.DATABASE_URL;
  const child = spawn(process.execPath, ['src/main.ts', command], {
    cwd: root,
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  const entries: Record<string, unknown>[] = [];
  const waiters: { msg: string; nth: number; resolve(entry: Record<string, unknown>): void }[] = [];
  const found = (msg: string, nth: number) => entries.filter((entry) => entry.msg === msg)[nth - 1];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    entries.push(entry);
    for (const waiter of waiters) {
      const match = waiter.msg === entry.msg ? found(waiter.msg, waiter.nth) : undefined;
      if (match) waiter.resolve(match);
    }
  });
  return {
    child,
    entries,
    exited,
    logged(msg, nth = 1) {
      return new Promise((resolve, reject) => {
        const entry = found(msg, nth);
        if (entry) return resolve(entry);
        waiters.push({ msg, nth, resolve });
        exited.then(([code, signal]) => reject(new Error(`${command} exited (${code ?? signal ?? 'unknown'}) before logging "${msg}" ${nth} time(s): ${stderr.slice(-2000)}`)), reject);
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

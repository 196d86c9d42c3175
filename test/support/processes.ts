/**
 * Service processes a test spawns (`node src/main.ts <command>`), with their JSON log lines
 * readable as they arrive. Killed (SIGKILL) by `stop()` when still running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  entries: Record<string, unknown>[];
  /** The first log entry with this message (waiting for it); rejects if the process exits first. */
  logged(msg: string, match?: (entry: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  stop(): Promise<void>;
}

export function spawnService(command: 'serve' | 'api' | 'worker' | 'ai', env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, ['src/main.ts', command], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'info', NODE_ENV: 'development', HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  const entries: Record<string, unknown>[] = [];
  const waiters: { msg: string; match: (entry: Record<string, unknown>) => boolean; resolve(entry: Record<string, unknown>): void }[] = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    entries.push(entry);
    for (const waiter of waiters) if (waiter.msg === entry.msg && waiter.match(entry)) waiter.resolve(entry);
  });
  return {
    child,
    entries,
    exited,
    logged(msg, match = () => true) {
      return new Promise((resolve, reject) => {
        const found = entries.find((entry) => entry.msg === msg && match(entry));
        if (found) return resolve(found);
        waiters.push({ msg, match, resolve });
        exited.then(([code, signal]) => reject(new Error(`${command} exited (${code ?? signal}) before logging "${msg}": ${stderr.slice(-2000)}`)));
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

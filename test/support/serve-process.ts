/**
 * `node src/main.ts serve` as a real process for the process tests: its JSON log read line by
 * line, so a test waits for events (a log line, the exit), never for a duration.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface ServedProcess {
  child: ChildProcess;
  /** The API's port, from its 'listening' line. */
  port: number;
  /** Every log entry so far, of the process and of the children that share its output. */
  entries: Record<string, unknown>[];
  /** Resolves with the `nth` (1 by default) log entry with this message. */
  logged(msg: string, nth?: number): Promise<Record<string, unknown>>;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  /** SIGKILL unless it has exited already. */
  kill(): Promise<void>;
}

export async function serveProcess(env: NodeJS.ProcessEnv): Promise<ServedProcess> {
  const fullEnv: NodeJS.ProcessEnv = { ...process.env, PORT: '0', AI_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', NODE_ENV: 'development', ...env };
  if (!env.DATABASE_URL) delete fullEnv.DATABASE_URL;
  const child = spawn(process.execPath, ['src/main.ts', 'serve'], { cwd: root, env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  // 'close', not 'exit': by then its output has been read to the end.
  const exited = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  const entries: Record<string, unknown>[] = [];
  const waiters: { msg: string; nth: number; resolve(entry: Record<string, unknown>): void }[] = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const found = (msg: string, nth: number) => entries.filter((entry) => entry.msg === msg)[nth - 1];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      entries.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      return;
    }
    for (const waiter of waiters) {
      const entry = found(waiter.msg, waiter.nth);
      if (entry) waiter.resolve(entry);
    }
  });
  const logged = (msg: string, nth = 1) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const entry = found(msg, nth);
      if (entry) return resolve(entry);
      waiters.push({ msg, nth, resolve });
      exited.then(([code]) => reject(new Error(`the server exited (${code}) before logging "${msg}" ${nth} times: ${stderr}`)));
    });
  const served: ServedProcess = {
    child, port: 0, entries, logged, exited,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
  served.port = (await logged('listening')).port as number;
  return served;
}

/** True while a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

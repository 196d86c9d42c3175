/**
 * A child process of `serve` (`main.ts <command>` forked with an IPC channel): the companion AI
 * service, and the job worker on a database server. It reports that it is ready with one IPC
 * message; a child that dies unexpectedly is started again after a short pause that grows while
 * it keeps dying. The child exits on its own when the IPC channel closes, so a parent killed with
 * SIGKILL leaves no orphan.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../logger.ts';
import { withServiceFlags } from './node-flags.ts';

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
const START_TIMEOUT_MS = 60_000;
const MAX_RESTART_DELAY_MS = 30_000;

/** What every child sends over IPC once it serves. */
export interface ReadyMessage {
  type: 'ready';
  /** The AI service's address; absent for the worker. */
  url?: string;
  port?: number;
}

export interface ChildOptions {
  /** The `main.ts` command the child runs: `ai` or `worker`. */
  command: 'ai' | 'worker';
  /** For log lines: 'AI service', 'job worker'. */
  name: string;
  /** Environment of each start (called again for a restart, so it can name what the first start learned). */
  env: () => NodeJS.ProcessEnv;
  logger: Logger;
  /** Called with each start's ready message (the first included). */
  onReady?: (message: ReadyMessage) => void;
}

export interface SupervisedChild {
  /** The first start's ready message. */
  ready: ReadyMessage;
  /** The running child's pid (changes with a restart). */
  pid(): number | undefined;
  /** SIGTERM to the child, then waits for it to exit (SIGKILL after `timeoutMs`). */
  close(timeoutMs?: number): Promise<void>;
}

export async function startSupervisedChild(options: ChildOptions): Promise<SupervisedChild> {
  const { command, name, logger } = options;
  let child: ChildProcess;
  let closing = false;
  let restartDelay = 500;

  const spawn = async (): Promise<ReadyMessage> => {
    child = fork(MAIN, [command], { env: options.env(), execArgv: withServiceFlags(process.execArgv), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const current = child;
    const ready = await new Promise<ReadyMessage>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the ${name} did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      current.on('message', (message: ReadyMessage) => {
        if (message?.type !== 'ready') return;
        clearTimeout(timer);
        resolve(message);
      });
      current.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the ${name} exited during its start (${signal ?? `code ${code}`})`));
      });
    });
    logger.info({ pid: current.pid, ...(ready.url ? { url: ready.url } : {}) }, `${name} process started`);
    options.onReady?.(ready);
    current.once('exit', (code, signal) => {
      if (closing) return;
      logger.error({ pid: current.pid, code, signal, restartInMs: restartDelay }, `the ${name} exited; starting it again`);
      setTimeout(() => void restart(), restartDelay).unref();
      restartDelay = Math.min(restartDelay * 2, MAX_RESTART_DELAY_MS);
    });
    return ready;
  };

  const restart = async () => {
    if (closing) return;
    try {
      await spawn();
      restartDelay = 500;
    } catch (error) {
      logger.error({ err: error }, `the ${name} failed to start again`);
    }
  };

  const ready = await spawn();
  return {
    ready,
    pid: () => child.pid,
    async close(timeoutMs = 15_000) {
      closing = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * In a child: tells the parent it is ready, and stops (SIGTERM to itself, so the usual drain
 * runs) when the IPC channel closes. No-op when the process was not forked with IPC.
 */
export function reportReady(message: Omit<ReadyMessage, 'type'> = {}): void {
  if (!process.send) return;
  process.send({ type: 'ready', ...message } satisfies ReadyMessage);
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}

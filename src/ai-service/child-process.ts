/**
 * `serve` runs the companion AI service as a child process (`main.ts ai`), so nothing a document
 * or the model does can stop, slow or fill the memory of the API's process and event loop. The
 * child gets AI_API_KEY (a fresh one when none is configured) and reports its address over the
 * IPC channel once it listens. A child that dies unexpectedly is started again on the same port,
 * after a short pause that grows while it keeps dying; the API meanwhile sees a refused
 * connection, which its client treats as a transient failure (jobs retry with backoff). The child
 * exits on its own when the IPC channel closes, so a parent killed with SIGKILL leaves no orphan.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { AiSettings } from '../config.ts';
import type { Logger } from '../logger.ts';
import { generateApiKey } from './api-key.ts';

/** What the child sends over IPC once it listens. */
export interface ReadyMessage {
  type: 'ai-ready';
  url: string;
  port: number;
}

export interface AiChild {
  url: string;
  /** The key the child demands; the API's client sends it. */
  apiKey: string;
  /** SIGTERM to the child, then waits for it to exit (SIGKILL after `timeoutMs`). */
  close(timeoutMs?: number): Promise<void>;
}

const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));
const START_TIMEOUT_MS = 60_000;
const MAX_RESTART_DELAY_MS = 30_000;

export async function startAiChild(settings: AiSettings, logger: Logger): Promise<AiChild> {
  const apiKey = settings.apiKey ?? generateApiKey();
  let port = settings.port;
  let child: ChildProcess;
  let closing = false;
  let restartDelay = 500;

  const spawn = async (): Promise<ReadyMessage> => {
    child = fork(MAIN, ['ai'], {
      env: { ...process.env, AI_API_KEY: apiKey, AI_PORT: String(port), AI_HOST: settings.host },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const current = child;
    const ready = await new Promise<ReadyMessage>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the AI service did not start within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      current.on('message', (message: ReadyMessage) => {
        if (message?.type !== 'ai-ready') return;
        clearTimeout(timer);
        resolve(message);
      });
      current.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the AI service exited during its start (${signal ?? `code ${code}`})`));
      });
    });
    logger.info({ pid: current.pid, url: ready.url }, 'AI service process started');
    current.once('exit', (code, signal) => {
      if (closing) return;
      logger.error({ pid: current.pid, code, signal, restartInMs: restartDelay }, 'the AI service exited; starting it again');
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
      logger.error({ err: error }, 'the AI service failed to start again');
    }
  };

  const ready = await spawn();
  port = ready.port; // AI_PORT=0 took a free port: a restart takes the same one, so AI_URL stays true
  return {
    url: ready.url,
    apiKey,
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

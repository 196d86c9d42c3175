/**
 * `serve` runs the companion AI service as a child process (`main.ts ai`, supervised by
 * process/supervised-child.ts), so nothing a document or the model does can stop, slow or fill the
 * memory of the API's process and event loop. The child gets AI_API_KEY (a fresh one when none is
 * configured) and reports its address once it listens. A child that dies is started again on the
 * same port; the API meanwhile sees a refused connection, which its client treats as a transient
 * failure (jobs retry with backoff).
 */
import type { AiSettings } from '../config.ts';
import type { Logger } from '../logger.ts';
import { startSupervisedChild } from '../process/supervised-child.ts';
import { generateApiKey } from './api-key.ts';

export interface AiChild {
  url: string;
  /** The key the child demands; the API's client sends it. */
  apiKey: string;
  /** SIGTERM to the child, then waits for it to exit (SIGKILL after `timeoutMs`). */
  close(timeoutMs?: number): Promise<void>;
}

export async function startAiChild(settings: AiSettings, logger: Logger): Promise<AiChild> {
  const apiKey = settings.apiKey ?? generateApiKey();
  let port = settings.port;
  const child = await startSupervisedChild({
    command: 'ai',
    name: 'AI service',
    logger,
    env: () => ({ ...process.env, AI_API_KEY: apiKey, AI_PORT: String(port), AI_HOST: settings.host }),
    // AI_PORT=0 took a free port: a restart takes the same one, so AI_URL stays true.
    onReady: (ready) => {
      if (ready.port) port = ready.port;
    },
  });
  return { url: child.ready.url!, apiKey, close: (timeoutMs) => child.close(timeoutMs) };
}

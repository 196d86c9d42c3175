/**
 * `node src/main.ts serve` as a real process for the process tests (processes.ts spawns it): its
 * JSON log read line by line, so a test waits for events (a log line, the exit), never for a duration.
 */
import { spawnService, type ServiceProcess } from './processes.ts';

export interface ServedProcess extends ServiceProcess {
  /** The API's port, from its 'listening' line. */
  port: number;
  /** SIGKILL unless it has exited already. */
  kill(): Promise<void>;
}

/** Serves on any free port, its AI service too, on the embedded database unless `env` names a DATABASE_URL. */
export async function serveProcess(env: NodeJS.ProcessEnv): Promise<ServedProcess> {
  const service = spawnService('serve', { AI_PORT: '0', ...env }, { withoutDatabaseUrl: !env.DATABASE_URL });
  const port = (await service.logged('listening')).port as number;
  return { ...service, port, kill: service.stop };
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

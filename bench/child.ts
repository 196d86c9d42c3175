/** A benchmark's helper process, kept for its whole run: each request sent over IPC gets one answer back. */
import { fork } from 'node:child_process';
import { once } from 'node:events';

export interface ChildWorker<Request, Answer> {
  /** Sends `request`; resolves with the child's next message, rejects if the child exits first. */
  run(request: Request): Promise<Answer>;
  /** Disconnects the IPC channel: the child ends once its work is done. */
  close(): void;
}

/** Forks `file` with `args` (process.execPath, the project's Node 24); `what` names it when it exits early. */
export function forkWorker<Request, Answer>(file: string, args: string[], what: string): ChildWorker<Request, Answer> {
  const child = fork(file, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = once(child, 'exit').then(() => {
    throw new Error(`${what} exited`);
  });
  exited.catch(() => {}); // after close() the exit is expected
  return {
    async run(request) {
      child.send(request as object);
      const [answer] = (await Promise.race([once(child, 'message'), exited])) as [Answer];
      return answer;
    },
    close() {
      child.disconnect();
    },
  };
}

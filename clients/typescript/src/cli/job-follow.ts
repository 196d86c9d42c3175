/**
 * Following one job to its end on the organization's event stream (jobs.stream), filtered to the
 * job's workspace. The stream carries what is committed after its `ready` event, so the job is
 * read once more after every `ready` (the first, and each after a reconnection): a change that
 * landed before the subscription, or while the connection was down, is never missed.
 */
import { CliError, ExitCode } from './exit-codes.ts';
import type { Client } from './session.ts';

export type Job = Awaited<ReturnType<Client['jobs']['get']>>;

const FINISHED: ReadonlySet<string> = new Set(['succeeded', 'failed', 'canceled']);

export const isFinished = (job: Job) => FINISHED.has(job.status);

/** Where the job is: its status and, for a job that reports it (workspace.index), how far it has come. */
const stateOf = (job: Job) => `${job.status} ${job.progress ? `${job.progress.done}/${job.progress.documents}/${job.progress.failed}` : ''}`;

/** Calls `onChange` with the job whenever its status or its progress changes, and answers it once finished. */
export async function followJob(client: Client, id: string, onChange: (job: Job) => void): Promise<Job> {
  let job = await client.jobs.get({ id });
  let state = stateOf(job);
  onChange(job);
  if (isFinished(job)) return job;

  const seen = (next: Job) => {
    job = next;
    if (stateOf(next) !== state) {
      state = stateOf(next);
      onChange(next);
    }
    return isFinished(next);
  };
  const stop = new AbortController();
  const events = client.jobs.stream({ organizationId: job.organizationId, ...(job.workspaceId ? { workspaceId: job.workspaceId } : {}) }, { signal: stop.signal });
  try {
    for await (const event of events) {
      if (event.event === 'ready') {
        if (seen(await client.jobs.get({ id }))) return job;
      } else if (event.event === 'job' && event.data.id === id) {
        if (seen(event.data)) return job;
      }
    }
  } finally {
    // Leaving early (the job finished) closes the connection, which frees the stream's slot.
    stop.abort();
  }
  // The iterator ends only when the server ended the stream for good (`end` `revoked`).
  if (seen(await client.jobs.get({ id }))) return job;
  throw new CliError(ExitCode.apiError, 'STREAM_ENDED', `The service ended the job stream (access revoked) while job ${id} was ${job.status}.`);
}

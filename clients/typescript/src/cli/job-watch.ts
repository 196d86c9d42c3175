/**
 * What `jobs run`, `jobs follow`, `documents upload --index` and `workspaces index` share: creating
 * a job (waiting out a full queue), watching it with a spinner or a log line per change (its status,
 * and its progress for a job that reports one), and the final line.
 */
import { ApiClientError } from '../index.ts';
import type { RunState } from './command-kit.ts';
import { ExitCode } from './exit-codes.ts';
import { reportFailure } from './failure.ts';
import { duration, grouped } from './format.ts';
import { failuresTable, indexFailures, indexResultOf, indexSummary } from './index-report.ts';
import { followJob, isFinished, type Job } from './job-follow.ts';
import { spinner } from './progress.ts';
import type { Client, Session } from './session.ts';

type JobsCreateInput = Parameters<Client['jobs']['create']>[0];

/**
 * How long a full queue (429 TOO_MANY_REQUESTS) is waited out when its answer has no Retry-After.
 * The service's Retry-After is the time one queued job takes to start at the pace the
 * organization's jobs have been starting, 1 to 10 s (10 when none has lately), and that is what
 * the CLI waits, each time.
 */
export const QUEUE_FULL_WAIT_MS = 10_000;
/**
 * How long refusals are waited out in all before the 429 is the answer: five waits of 10 s, or
 * fifty of 1 s while the queue moves fast. Counted in time, not tries: a short Retry-After must
 * not make the CLI give up sooner.
 */
const QUEUE_FULL_PATIENCE_MS = 5 * QUEUE_FULL_WAIT_MS;

/**
 * jobs.create, tried again while the organization's queue is full: nothing is created or charged
 * by a refusal, so trying again is safe. After QUEUE_FULL_PATIENCE_MS of waits the 429 is the answer.
 */
export async function createJob(session: Session, input: JobsCreateInput, waitMs = QUEUE_FULL_WAIT_MS): Promise<Job> {
  let waited = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      return await session.client().jobs.create(input);
    } catch (error) {
      if (!(error instanceof ApiClientError && error.status === 429)) throw error;
      const wait = error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : waitMs;
      if (waited + wait > QUEUE_FULL_PATIENCE_MS) throw error;
      // The tries left at this wait, said as "n of m".
      const tries = attempt - 1 + Math.floor((QUEUE_FULL_PATIENCE_MS - waited) / Math.max(wait, 1));
      session.output.note(`${error.message} Trying again in ${Math.round(wait / 1000)} s (${attempt} of ${tries}).`);
      waited += wait;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/**
 * Without a person watching, a job's progress is logged at most this often (its status changes
 * always): a workspace of thousands of documents would otherwise log a line for each.
 */
const PROGRESS_LOG_INTERVAL_MS = 1000;

/**
 * Follows the job to its end: a spinner with its status (and progress) for a person, a line per
 * change on stderr in a log. Ctrl-C stops the watching only: the job goes on on the service, and
 * the tool says so and how to follow it again or cancel it (exit code 130).
 */
export async function watchJob(session: Session, id: string): Promise<Job> {
  const { output } = session;
  const spin = spinner(output, `Job ${id}: connecting`);
  let last: Job | undefined;
  let loggedAt = 0;
  const interrupted = () => {
    spin.stop();
    stopWatching(session, id, last);
  };
  process.once('SIGINT', interrupted);
  try {
    return await followJob(session.client(), id, (current) => {
      const statusChanged = current.status !== last?.status;
      last = current;
      const text = statusLine(current);
      spin.text(text);
      if (output.interactive || isFinished(current)) return;
      if (statusChanged || Date.now() - loggedAt >= PROGRESS_LOG_INTERVAL_MS) {
        output.note(text);
        loggedAt = Date.now();
      }
    });
  } finally {
    process.off('SIGINT', interrupted);
    spin.stop();
  }
}

/** `Job job_... (workspace.index): running, 120/2000 documents done, 1 failed`. */
function statusLine(job: Job): string {
  const progress = job.progress ? `, ${job.progress.done}/${job.progress.documents} documents done, ${job.progress.failed} failed` : '';
  return `Job ${job.id} (${job.kind}): ${job.status}${progress}`;
}

/** Ctrl-C: the job is not canceled (a long workspace.index goes on); say so, and exit 130. */
function stopWatching(session: Session, id: string, job: Job | undefined): never {
  const where = job ? ` (${job.kind}, ${job.status}${job.progress ? `: ${job.progress.done}/${job.progress.documents} documents done` : ''})` : '';
  const message = `Stopped following job ${id}${where}; the job goes on on the service. Follow it again with \`workspace-api jobs follow ${id}\`, or cancel it with \`workspace-api jobs cancel ${id}\`.`;
  // With --json stderr carries errors only, as JSON: the interruption is reported as one.
  if (session.output.json) reportFailure({ exitCode: ExitCode.interrupted, code: 'INTERRUPTED', message }, true);
  else session.output.note(message);
  process.exit(ExitCode.interrupted);
}

/**
 * Prints the finished job: the job as JSON, or its final line (and, for a workspace.index job,
 * the documents that failed, with their names). Exit code 4 unless it succeeded; a job that
 * succeeded with some documents failed is a success (0): the failures are listed.
 */
export async function reportJob(session: Session, state: RunState, job: Job): Promise<void> {
  const { output } = session;
  const failures = output.json ? [] : await indexFailures(session.client(), job);
  output.result(job, () => {
    output.line(finalLine(job, output.interactive));
    if (failures.length > 0) output.line(failuresTable(failures, output.columns));
    const failed = indexResultOf(job)?.failed ?? 0;
    if (failed > failures.length) output.note(`The first ${failures.length} of the ${failed} documents that failed are listed.`);
  });
  if (job.status !== 'succeeded') state.exitCode = ExitCode.jobFailed;
}

/** The job's end in one line: how long it took and what it gave, or why it failed. */
export function finalLine(job: Job, symbols: boolean): string {
  const took = job.finishedAt ? new Date(job.finishedAt).getTime() - new Date(job.startedAt ?? job.createdAt).getTime() : undefined;
  const mark = (ok: boolean) => (symbols ? (ok ? '✔ ' : '✖ ') : '');
  const title = `Job ${job.id} (${job.kind})`;
  if (job.status === 'succeeded') {
    const summary = resultSummary(job);
    return `${mark(true)}${title} succeeded${took === undefined ? '' : ` in ${duration(took)}`}${summary ? `: ${summary}` : ''}.`;
  }
  if (job.status === 'canceled') {
    const reached = job.progress && job.progress.done > 0 ? ` after ${grouped(job.progress.done)} of ${grouped(job.progress.documents)} documents (what it indexed stays indexed)` : '';
    return `${mark(false)}${title} was canceled${reached}.`;
  }
  return `${mark(false)}${title} failed${took === undefined ? '' : ` after ${duration(took)}`}: ${job.error?.message ?? 'no reason given'}`;
}

/** The outcome in a few words, from the job's result (its shape depends on the kind). */
function resultSummary(job: Job): string | undefined {
  const result = job.result as Record<string, unknown> | undefined;
  if (!result) return undefined;
  if (job.kind === 'document.extract') return `${count(result.characters, 'character')}${typeof result.pages === 'number' ? `, ${count(result.pages, 'page')}` : ''}`;
  if (job.kind === 'document.index') return `${count(result.chunks, 'chunk')}${typeof result.model === 'string' ? ` embedded with ${result.model}` : ''}`;
  const indexed = indexResultOf(job);
  if (indexed) return indexSummary(indexed);
  if (job.kind === 'text.embed' && Array.isArray(result.vectors)) return `${count(result.vectors.length, 'vector')}${typeof result.model === 'string' ? ` from ${result.model}` : ''}`;
  return undefined;
}

const count = (value: unknown, noun: string) => `${String(value)} ${noun}${value === 1 ? '' : 's'}`;

/**
 * What `jobs run`, `jobs follow` and `documents upload --index` share: creating a job (waiting out
 * a full queue), watching it with a spinner or a log line per status change, and the final line.
 */
import { ApiClientError } from '../index.ts';
import { duration } from './format.ts';
import { followJob, isFinished, type Job } from './job-follow.ts';
import { spinner } from './progress.ts';
import type { Client, Session } from './session.ts';

type JobsCreateInput = Parameters<Client['jobs']['create']>[0];

/**
 * How long a full queue (429 TOO_MANY_REQUESTS) is waited out when its answer has no Retry-After;
 * the service sends `Retry-After: 10` (QUEUE_FULL_RETRY_AFTER_SECONDS), about when some queued
 * jobs have run, and that is what the CLI waits.
 */
export const QUEUE_FULL_WAIT_MS = 10_000;
const QUEUE_FULL_ATTEMPTS = 6;

/**
 * jobs.create, tried again while the organization's queue is full: nothing is created or charged
 * by a refusal, so trying again is safe. After a minute of refusals the 429 is the answer.
 */
export async function createJob(session: Session, input: JobsCreateInput, waitMs = QUEUE_FULL_WAIT_MS): Promise<Job> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await session.client().jobs.create(input);
    } catch (error) {
      if (!(error instanceof ApiClientError && error.status === 429) || attempt >= QUEUE_FULL_ATTEMPTS) throw error;
      const wait = error.retryAfterSeconds !== undefined ? error.retryAfterSeconds * 1000 : waitMs;
      session.output.note(`${error.message} Trying again in ${Math.round(wait / 1000)} s (${attempt} of ${QUEUE_FULL_ATTEMPTS - 1}).`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** Follows the job to its end: a spinner with its status for a person, a line per status change on stderr in a log. */
export async function watchJob(session: Session, id: string): Promise<Job> {
  const { output } = session;
  const spin = spinner(output, `Job ${id}: connecting`);
  try {
    return await followJob(session.client(), id, (current) => {
      const text = `Job ${current.id} (${current.kind}): ${current.status}`;
      spin.text(text);
      if (!output.interactive && !isFinished(current)) output.note(text);
    });
  } finally {
    spin.stop();
  }
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
  if (job.status === 'canceled') return `${mark(false)}${title} was canceled.`;
  return `${mark(false)}${title} failed${took === undefined ? '' : ` after ${duration(took)}`}: ${job.error?.message ?? 'no reason given'}`;
}

/** The outcome in a few words, from the job's result (its shape depends on the kind). */
function resultSummary(job: Job): string | undefined {
  const result = job.result as Record<string, unknown> | undefined;
  if (!result) return undefined;
  if (job.kind === 'document.extract') return `${count(result.characters, 'character')}${typeof result.pages === 'number' ? `, ${count(result.pages, 'page')}` : ''}`;
  if (job.kind === 'document.index') return `${count(result.chunks, 'chunk')}${typeof result.model === 'string' ? ` embedded with ${result.model}` : ''}`;
  if (job.kind === 'text.embed' && Array.isArray(result.vectors)) return `${count(result.vectors.length, 'vector')}${typeof result.model === 'string' ? ` from ${result.model}` : ''}`;
  return undefined;
}

const count = (value: unknown, noun: string) => `${String(value)} ${noun}${value === 1 ? '' : 's'}`;

/** `jobs run <kind>` and `jobs follow <id>`: start a job, and watch it live until it ends. */
import { Argument, type Command } from 'commander';
import { withSession, type RunState } from '../command-kit.ts';
import { ExitCode, usageError } from '../exit-codes.ts';
import { duration } from '../format.ts';
import { followJob, isFinished, type Job } from '../job-follow.ts';
import { spinner } from '../progress.ts';
import type { Client, Session } from '../session.ts';

type JobsCreateInput = Parameters<Client['jobs']['create']>[0];

const KINDS = ['document.extract', 'document.index', 'text.embed'] as const;

export function registerJobCommands(program: Command, state: RunState): void {
  const jobs = program.command('jobs').helpCommand(false).description('run jobs (extract, index, embed) and follow them live');

  jobs
    .command('run')
    .description('start a job and follow it until it ends (exit code 0 only if it succeeded, 4 if it failed or was canceled)')
    .addArgument(new Argument('<kind>', 'what the job does').choices(KINDS))
    .option('--document <id>', 'the document of a document.extract or document.index job')
    .option('--text <text...>', 'the texts of a text.embed job (one or more)')
    .option('--no-follow', 'print the queued job and return at once')
    .addHelpText('after', '\nExamples:\n  $ workspace-api jobs run document.index --document doc_...\n  $ workspace-api jobs run text.embed --text "first text" "second text" --json')
    .action(withSession(state, async (session, kind: (typeof KINDS)[number], options: { document?: string; text?: string[]; follow: boolean }) => {
      const input = jobInput(kind, await session.organization(), options);
      const job = await session.client().jobs.create(input);
      if (!options.follow) {
        return session.output.result(job, () => session.output.line(`Queued job ${job.id} (${job.kind}). Follow it with: workspace-api jobs follow ${job.id}`));
      }
      await follow(session, state, job.id);
    }));

  jobs
    .command('follow')
    .description('watch a job live until it ends (exit code 0 only if it succeeded, 4 if it failed or was canceled)')
    .argument('<job>', 'job id (job_...)')
    .action(withSession(state, async (session, id: string) => follow(session, state, id)));
}

function jobInput(kind: (typeof KINDS)[number], organizationId: string, options: { document?: string; text?: string[] }): JobsCreateInput {
  if (kind === 'text.embed') {
    if (options.document) throw usageError('A text.embed job takes --text, not --document.');
    if (!options.text?.length) throw usageError('A text.embed job needs --text <text...>.');
    return { organizationId, kind, input: { texts: options.text } };
  }
  if (options.text) throw usageError(`A ${kind} job takes --document, not --text.`);
  if (!options.document) throw usageError(`A ${kind} job needs --document <id>.`);
  return { organizationId, kind, documentId: options.document };
}

/**
 * Follows the job: a spinner with its status for a person, a line per status change in a log, the
 * final job as JSON with --json. Then the final line, and exit code 4 unless it succeeded.
 */
async function follow(session: Session, state: RunState, id: string): Promise<void> {
  const { output } = session;
  const spin = spinner(output, `Job ${id}: connecting`);
  let job: Job;
  try {
    job = await followJob(session.client(), id, (current) => {
      const text = `Job ${current.id} (${current.kind}): ${current.status}`;
      spin.text(text);
      if (!output.interactive && !isFinished(current)) output.note(text);
    });
  } finally {
    spin.stop();
  }
  output.result(job, () => output.line(finalLine(job, output.interactive)));
  if (job.status !== 'succeeded') state.exitCode = ExitCode.jobFailed;
}

function finalLine(job: Job, symbols: boolean): string {
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

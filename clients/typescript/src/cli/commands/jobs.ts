/** `jobs run <kind>` and `jobs follow <id>`: start a job, and watch it live until it ends. */
import { Argument, type Command } from 'commander';
import { withSession, type RunState } from '../command-kit.ts';
import { ExitCode, usageError } from '../exit-codes.ts';
import { createJob, finalLine, watchJob } from '../job-watch.ts';
import type { Client, Session } from '../session.ts';
import { jobKindValues } from '../../enums.ts';

type JobsCreateInput = Parameters<Client['jobs']['create']>[0];

// The contract's job kinds (generated): a kind added there is a choice here after `make codegen`.
const KINDS = jobKindValues;

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
    .action(
      withSession(state, async (session, kind: (typeof KINDS)[number], options: { document?: string; text?: string[]; follow: boolean }) => {
        const input = jobInput(kind, await session.organization(), options);
        const job = await createJob(session, input);
        if (!options.follow) {
          return session.output.result(job, () => session.output.line(`Queued job ${job.id} (${job.kind}). Follow it with: workspace-api jobs follow ${job.id}`));
        }
        await follow(session, state, job.id);
      }),
    );

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

/** Follows the job to its end; prints it (the final line, or the job as JSON), and exit code 4 unless it succeeded. */
async function follow(session: Session, state: RunState, id: string): Promise<void> {
  const job = await watchJob(session, id);
  session.output.result(job, () => session.output.line(finalLine(job, session.output.interactive)));
  if (job.status !== 'succeeded') state.exitCode = ExitCode.jobFailed;
}

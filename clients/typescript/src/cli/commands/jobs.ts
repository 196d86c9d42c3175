/** `jobs run <kind>`, `jobs follow <id>` and `jobs cancel <id>`: start a job, watch it live until it ends, or stop it. */
import { Argument, type Command } from 'commander';
import { withSession, type RunState } from '../command-kit.ts';
import { usageError } from '../exit-codes.ts';
import { createJob, reportJob, watchJob } from '../job-watch.ts';
import type { Client, Session } from '../session.ts';
import { jobKindValues } from '../../enums.ts';

type JobsCreateInput = Parameters<Client['jobs']['create']>[0];

// The contract's job kinds (generated): a kind added there is a choice here after `make codegen`.
const KINDS = jobKindValues;

interface RunOptions {
  document?: string;
  workspace?: string;
  text?: string[];
}

export function registerJobCommands(program: Command, state: RunState): void {
  const jobs = program.command('jobs').helpCommand(false).description('run jobs (extract, index, embed) and follow them live');

  jobs
    .command('run')
    .description('start a job and follow it until it ends (exit code 0 only if it succeeded, 4 if it failed or was canceled)')
    .addArgument(new Argument('<kind>', 'what the job does').choices(KINDS))
    .option('--document <id>', 'the document of a document.extract or document.index job')
    .option('--workspace <workspace>', 'the workspace of a workspace.index job, by id (ws_...) or slug')
    .option('--text <text...>', 'the texts of a text.embed job (one or more)')
    .option('--no-follow', 'print the queued job and return at once')
    .addHelpText(
      'after',
      '\nCtrl-C stops the following only (exit code 130): the job goes on on the service.\n\nExamples:\n  $ workspace-api jobs run document.index --document doc_...\n  $ workspace-api jobs run workspace.index --workspace research --no-follow\n  $ workspace-api jobs run text.embed --text "first text" "second text" --json',
    )
    .action(
      withSession(state, async (session, kind: (typeof KINDS)[number], options: RunOptions & { follow: boolean }) => {
        const input = await jobInput(session, kind, options);
        const job = await createJob(session, input);
        if (!options.follow) {
          return session.output.result(job, () => session.output.line(`Queued job ${job.id} (${job.kind}). Follow it with: workspace-api jobs follow ${job.id}`));
        }
        await reportJob(session, state, await watchJob(session, job.id));
      }),
    );

  jobs
    .command('follow')
    .description('watch a job live until it ends (exit code 0 only if it succeeded, 4 if it failed or was canceled)')
    .argument('<job>', 'job id (job_...)')
    .addHelpText('after', '\nCtrl-C stops the following only (exit code 130): the job goes on on the service.')
    .action(withSession(state, async (session, id: string) => reportJob(session, state, await watchJob(session, id))));

  jobs
    .command('cancel')
    .description('cancel a queued job, or a running workspace.index job (it stops after the documents in hand and keeps what it indexed)')
    .argument('<job>', 'job id (job_...)')
    .action(
      withSession(state, async (session, id: string) => {
        const job = await session.client().jobs.cancel({ id });
        session.output.result(job, () => session.output.line(`Canceled job ${job.id} (${job.kind}).`));
      }),
    );
}

/** The jobs.create body for the kind, from the options it takes (anything else is a usage error, before any call). */
async function jobInput(session: Session, kind: (typeof KINDS)[number], options: RunOptions): Promise<JobsCreateInput> {
  const given = [options.document && '--document', options.workspace && '--workspace', options.text && '--text'].filter((option): option is string => Boolean(option));
  const only = (wanted: string) => {
    const other = given.find((option) => option !== wanted);
    if (other) throw usageError(`A ${kind} job takes ${wanted}, not ${other}.`);
  };
  if (kind === 'text.embed') {
    only('--text');
    if (!options.text?.length) throw usageError('A text.embed job needs --text <text...>.');
    return { organizationId: await session.organization(), kind, input: { texts: options.text } };
  }
  if (kind === 'workspace.index') {
    only('--workspace');
    if (!options.workspace) throw usageError('A workspace.index job needs --workspace <workspace>.');
    return { organizationId: await session.organization(), kind, workspaceId: await session.workspace(options.workspace) };
  }
  only('--document');
  if (!options.document) throw usageError(`A ${kind} job needs --document <id>.`);
  return { organizationId: await session.organization(), kind, documentId: options.document };
}

/** `workspaces list`, `workspaces create` and `workspaces index`, in the organization of --org (or your only one). */
import type { Command } from 'commander';
import { withSession, type RunState } from '../command-kit.ts';
import { ExitCode } from '../exit-codes.ts';
import { date } from '../format.ts';
import { createJob, reportJob, watchJob } from '../job-watch.ts';
import { slugOf } from '../slug.ts';
import { renderTable } from '../table.ts';

export function registerWorkspaceCommands(program: Command, state: RunState): void {
  const workspaces = program.command('workspaces').helpCommand(false).description('list, create and index the workspaces of an organization');

  workspaces
    .command('list')
    .description('list the workspaces of the organization, oldest first')
    .action(
      withSession(state, async (session) => {
        const list = await session.client().workspaces.list({ organizationId: await session.organization() });
        session.output.result(list, () => {
          if (list.length === 0) return session.output.note('No workspaces yet: create one with `workspace-api workspaces create <name>`.');
          session.output.line(
            renderTable(
              list,
              [
                { header: 'ID', value: (w) => w.id },
                { header: 'SLUG', value: (w) => w.slug },
                { header: 'NAME', value: (w) => w.name, shrink: true },
                { header: 'CREATED', value: (w) => date(w.createdAt) },
              ],
              session.output.columns,
            ),
          );
        });
      }),
    );

  workspaces
    .command('create')
    .description('create a workspace')
    .argument('<name>', 'display name')
    .option('--slug <slug>', 'lowercase letters, digits and inner hyphens, unique in the organization (default: made from the name)')
    .option('--team <teamId>', 'a team of the organization the workspace belongs to')
    .addHelpText('after', '\nExample:\n  $ workspace-api workspaces create "Q3 Research" --slug q3-research')
    .action(
      withSession(state, async (session, name: string, options: { slug?: string; team?: string }) => {
        const slug = options.slug ?? slugOf(name);
        const workspace = await session.client().workspaces.create({ organizationId: await session.organization(), name, slug, ...(options.team ? { teamId: options.team } : {}) });
        session.output.result(workspace, () => session.output.line(`Created workspace ${workspace.slug} (${workspace.id}).`));
      }),
    );

  workspaces
    .command('index')
    .description('index every ready document of the workspace not yet indexed with the current model, in one workspace.index job, and follow it live')
    .argument('<workspace>', 'workspace id (ws_...) or slug')
    .addHelpText(
      'after',
      `
The job's progress (documents done of all, and failed) shows while it runs; at the end one line
sums it up and the documents that failed are listed with the reason. Exit code ${ExitCode.ok} when the job
succeeded, even with some documents failed (--json: .result.failed counts them), ${ExitCode.jobFailed} when it
failed or was canceled. Ctrl-C stops the following only (exit code ${ExitCode.interrupted}): the job goes on on
the service (\`workspace-api jobs cancel <job>\` stops it). Examples:
  $ workspace-api documents upload research notes/*.md
  $ workspace-api workspaces index research
  $ workspace-api workspaces index research --json | jq '.result.failures'`,
    )
    .action(
      withSession(state, async (session, workspace: string) => {
        const organizationId = await session.organization();
        const queued = await createJob(session, { organizationId, kind: 'workspace.index', workspaceId: await session.workspace(workspace) });
        await reportJob(session, state, await watchJob(session, queued.id));
      }),
    );
}

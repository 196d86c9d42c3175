/** `workspaces list` and `workspaces create`, in the organization of --org (or your only one). */
import type { Command } from 'commander';
import { withSession, type RunState } from '../command-kit.ts';
import { date } from '../format.ts';
import { slugOf } from '../slug.ts';
import { renderTable } from '../table.ts';

export function registerWorkspaceCommands(program: Command, state: RunState): void {
  const workspaces = program.command('workspaces').helpCommand(false).description('list and create the workspaces of an organization');

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
}

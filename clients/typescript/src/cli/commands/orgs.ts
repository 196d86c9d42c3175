/** `orgs`: the organizations the caller belongs to (the identity route /api/auth/organization/list). */
import type { Command } from 'commander';
import { withSession, type RunState } from '../command-kit.ts';
import { date } from '../format.ts';
import { renderTable } from '../table.ts';

export function registerOrgCommands(program: Command, state: RunState): void {
  program
    .command('orgs')
    .description('list your organizations and your role in each (use an id or slug as --org)')
    .action(withSession(state, async (session) => {
      const organizations = await session.identity.organizations(session.requireToken());
      session.output.result(organizations, () => {
        if (organizations.length === 0) return session.output.note('You are not a member of any organization.');
        session.output.line(renderTable(organizations, [
          { header: 'ID', value: (o) => o.id },
          { header: 'SLUG', value: (o) => o.slug },
          { header: 'NAME', value: (o) => o.name, shrink: true },
          { header: 'ROLE', value: (o) => o.role },
          { header: 'CREATED', value: (o) => date(o.createdAt) },
        ], session.output.columns));
      });
    }));
}

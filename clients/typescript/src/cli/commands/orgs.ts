/**
 * `orgs` (`orgs list`), `orgs create` and `orgs use`: the organizations the caller belongs to
 * (the identity routes /api/auth/organization/*), and which one the other commands act in.
 */
import type { Command } from 'commander';
import { withSession, type RunState } from '../command-kit.ts';
import { writeCredentials } from '../credentials.ts';
import { CliError, ExitCode, usageError } from '../exit-codes.ts';
import { date } from '../format.ts';
import { slugOf } from '../slug.ts';
import { renderTable } from '../table.ts';

export function registerOrgCommands(program: Command, state: RunState): void {
  const orgs = program.command('orgs').helpCommand(false).description('list and create your organizations, and choose the one the commands act in');

  orgs
    // The default: `workspace-api orgs` lists, as it did before the group had other commands.
    .command('list', { isDefault: true })
    .description('list your organizations and your role in each (use an id or slug as --org)')
    .action(
      withSession(state, async (session) => {
        const organizations = await session.identity.organizations(session.requireToken());
        const chosen = session.token?.source === 'login' ? session.credentials?.organization?.id : undefined;
        session.output.result(organizations, () => {
          if (organizations.length === 0) return session.output.note('You are not a member of any organization: create one with `workspace-api orgs create --name <name>`.');
          session.output.line(
            renderTable(
              organizations,
              [
                { header: 'ID', value: (o) => o.id },
                { header: 'SLUG', value: (o) => o.slug },
                { header: 'NAME', value: (o) => o.name, shrink: true },
                { header: 'ROLE', value: (o) => o.role },
                { header: 'CREATED', value: (o) => date(o.createdAt) },
              ],
              session.output.columns,
            ),
          );
          if (chosen) session.output.note(`In use (orgs use): ${organizations.find((o) => o.id === chosen)?.slug ?? chosen}.`);
        });
      }),
    );

  orgs
    .command('create')
    .description('create an organization, with you as its owner')
    .requiredOption('--name <name>', 'display name')
    .option('--slug <slug>', 'lowercase letters, digits and inner hyphens, unique on the service (default: made from the name)')
    .addHelpText('after', '\nExample:\n  $ workspace-api orgs create --name "Acme Corp" --slug acme')
    .action(
      withSession(state, async (session, options: { name: string; slug?: string }) => {
        const slug = options.slug ?? slugOf(options.name);
        const created = await session.identity.createOrganization(session.requireToken(), { name: options.name, slug });
        session.output.result(created, () => session.output.line(`Created organization ${created.slug} (${created.id}); you are its owner.`));
      }),
    );

  orgs
    .command('use')
    .description('act in this organization when --org and WORKSPACE_API_ORG name none (saved with the sign-in of `login`)')
    .argument('<org>', 'organization id (org_...) or slug')
    .addHelpText('after', '\nExample:\n  $ workspace-api orgs use acme')
    .action(
      withSession(state, async (session, reference: string) => {
        const saved = session.credentials;
        if (!saved || saved.url !== session.url || session.token?.source !== 'login') {
          throw new CliError(
            ExitCode.notSignedIn,
            'NOT_SIGNED_IN',
            `orgs use is saved with the sign-in of \`workspace-api login\` (or signup) for ${session.url}; with --token or WORKSPACE_API_TOKEN pass --org or WORKSPACE_API_ORG instead.`,
          );
        }
        const organizations = await session.identity.organizations(session.requireToken());
        const found = organizations.find((o) => o.id === reference || o.slug === reference);
        if (!found) throw usageError(`You are not a member of an organization "${reference}"${organizations.length ? `; yours: ${organizations.map((o) => o.slug).join(', ')}` : ''}.`);
        await writeCredentials({ ...saved, organization: { id: found.id, slug: found.slug } }, session.env);
        session.output.result({ id: found.id, slug: found.slug, name: found.name }, () => session.output.line(`Using organization ${found.slug} (${found.id}).`));
      }),
    );
}

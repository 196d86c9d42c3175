/** `login`, `logout` and `whoami`: the session the other commands run with. */
import type { Command } from 'commander';
import { ApiClientError } from '../../index.ts';
import { withSession, type RunState } from '../command-kit.ts';
import { credentialsPath, deleteCredentials, writeCredentials } from '../credentials.ts';
import { CliError, ExitCode, usageError } from '../exit-codes.ts';
import { askIfTerminal, readStdin } from '../prompt.ts';
import type { Session } from '../session.ts';

export function registerAuthCommands(program: Command, state: RunState): void {
  program
    .command('login')
    .description('sign in with your email address and password, and save the session token for the next commands')
    .option('--email <email>', "the account's email address (else WORKSPACE_API_EMAIL, else asked)")
    .option('--password-stdin', 'read the password from stdin (else WORKSPACE_API_PASSWORD, else asked with echo off)')
    .addHelpText(
      'after',
      `
The token is saved in ${credentialsPath()} (mode 600, its folder 700) with the
service's address, and is sent to that address only. Examples:
  $ workspace-api login --url https://api.example.com
  $ printf '%s' "$PASSWORD" | workspace-api login --email ada@example.com --password-stdin`,
    )
    .action(
      withSession(state, async (session, options: { email?: string; passwordStdin?: boolean }) => {
        const email = options.email ?? session.env.WORKSPACE_API_EMAIL ?? (await askIfTerminal('Email: '));
        const password = options.passwordStdin ? await readStdin() : (session.env.WORKSPACE_API_PASSWORD ?? (await askIfTerminal('Password: ', true)));
        if (!email || !password) throw usageError('Give the email address and the password (see `workspace-api login --help`).');
        const signedIn = await session.identity.signIn(email, password);
        if (!signedIn.token) throw new CliError(ExitCode.apiError, 'NO_SESSION', 'The service signed you in without creating a session.');
        const { id, name } = signedIn.user;
        // Signing in again keeps the organization `orgs use` chose, when it is the same account.
        const previous = session.credentials?.url === session.url && session.credentials.user.id === id ? session.credentials.organization : undefined;
        const path = await writeCredentials(
          { url: session.url, token: signedIn.token, user: { id, email: signedIn.user.email, name }, ...(previous ? { organization: previous } : {}), savedAt: new Date().toISOString() },
          session.env,
        );
        session.output.result({ url: session.url, user: signedIn.user, credentialsPath: path }, () => {
          session.output.line(`Signed in to ${session.url} as ${signedIn.user.email}.`);
          session.output.note(`The token is saved in ${path}.`);
        });
        if (session.token && session.token.source !== 'login') {
          session.output.note(`Note: ${session.token.source === 'flag' ? '--token' : 'WORKSPACE_API_TOKEN'} is set and is used instead of the saved token.`);
        }
      }),
    );

  program
    .command('logout')
    .description('sign out at the service and delete the saved token')
    .action(
      withSession(state, async (session) => {
        const saved = session.credentials && session.credentials.url === session.url ? session.credentials : null;
        // The session in use and the saved one (they differ when --token or WORKSPACE_API_TOKEN is set).
        const tokens = [...new Set([session.token?.value, saved?.token].filter((token): token is string => Boolean(token)))];
        if (tokens.length === 0) session.requireToken();
        let unreachable: ApiClientError | undefined;
        for (const token of tokens) {
          try {
            await session.identity.signOut(token);
          } catch (error) {
            // A token the service no longer knows is signed out already.
            if (error instanceof ApiClientError && error.status === 401) continue;
            if (error instanceof ApiClientError && error.status === 0) unreachable = error;
            else throw error;
          }
        }
        const deleted = saved ? await deleteCredentials(session.env) : false;
        if (unreachable) {
          session.output.note(
            deleted ? `Deleted the saved token, but the service could not be told: the session stays valid until it expires.` : 'The service could not be told: the session stays valid until it expires.',
          );
          throw unreachable;
        }
        session.output.result({ url: session.url, signedOut: true, credentialsDeleted: deleted }, () => {
          session.output.line(`Signed out of ${session.url}.${deleted ? ` Deleted ${credentialsPath(session.env)}.` : ''}`);
        });
      }),
    );

  program
    .command('whoami')
    .description('show who the token belongs to, on which service')
    .action(
      withSession(state, async (session) => {
        const user = await session.client().user.me();
        const source = describeSource(session);
        session.output.result({ url: session.url, tokenSource: session.token!.source, user }, () => {
          session.output.line(`${user.email} (${user.name}, ${user.id})`);
          session.output.line(`service: ${session.url}`);
          session.output.line(`token:   ${source}`);
          if (user.role === 'admin') session.output.line('role:    platform administrator');
        });
      }),
    );
}

function describeSource(session: Session): string {
  switch (session.token?.source) {
    case 'flag':
      return 'from --token';
    case 'environment':
      return 'from WORKSPACE_API_TOKEN';
    default:
      return `saved by login in ${credentialsPath(session.env)}`;
  }
}

/**
 * `signup`: a new account (auth.signUpEmail). When the service signs the account in at once, the
 * session is saved as `login` saves it, so the next command (`orgs create`) runs signed in.
 */
import type { Command } from 'commander';
import { withSession, type RunState } from '../command-kit.ts';
import { credentialsPath, writeCredentials } from '../credentials.ts';
import { ExitCode, usageError } from '../exit-codes.ts';
import { askIfTerminal, readStdin } from '../prompt.ts';

export function registerSignupCommand(program: Command, state: RunState): void {
  program
    .command('signup')
    .description('create an account with your email address, a password and your name, and sign in')
    .option('--email <email>', "the new account's email address (else WORKSPACE_API_EMAIL, else asked)")
    .option('--name <name>', 'your display name (else asked)')
    .option('--password-stdin', 'read the password from stdin (else WORKSPACE_API_PASSWORD, else asked twice with echo off)')
    .addHelpText(
      'after',
      `
The password takes 8 to 128 characters. The token is saved in ${credentialsPath()}
as \`login\` saves it. When the service requires a verified email address, signup creates the
account, signs nobody in and exits with code ${ExitCode.notSignedIn}: open the link in the email,
then run \`workspace-api login\`. Examples:
  $ workspace-api signup --url https://api.example.com
  $ printf '%s' "$PASSWORD" | workspace-api signup --email ada@example.com --name "Ada Lovelace" --password-stdin`,
    )
    .action(
      withSession(state, async (session, options: { email?: string; name?: string; passwordStdin?: boolean }) => {
        const email = options.email ?? session.env.WORKSPACE_API_EMAIL ?? (await askIfTerminal('Email: '));
        const name = options.name ?? (await askIfTerminal('Name: '));
        const password = options.passwordStdin ? await readStdin() : (session.env.WORKSPACE_API_PASSWORD ?? (await askNewPassword()));
        if (!email || !name || !password) throw usageError('Give the email address, the name and the password (see `workspace-api signup --help`).');
        const created = await session.identity.signUp({ email, password, name });
        const { id, email: address } = created.user;
        if (!created.token) {
          session.output.result({ url: session.url, user: created.user, signedIn: false, emailVerificationRequired: true }, () => {
            session.output.line(`Created the account ${address} on ${session.url}.`);
          });
          session.output.note(`This service requires a verified email address: open the link sent to ${address}, then run \`workspace-api login --email ${address}\`.`);
          // The account exists but nobody is signed in: a script's next command would fail with 3 anyway.
          state.exitCode = ExitCode.notSignedIn;
          return;
        }
        const path = await writeCredentials({ url: session.url, token: created.token, user: { id, email: address, name: created.user.name }, savedAt: new Date().toISOString() }, session.env);
        session.output.result({ url: session.url, user: created.user, signedIn: true, credentialsPath: path }, () => {
          session.output.line(`Created the account ${address} on ${session.url} and signed in.`);
          session.output.note(`The token is saved in ${path}. Next: \`workspace-api orgs create --name "..."\`.`);
        });
      }),
    );
}

/** A new password, typed twice at a terminal, so a typo does not lock the person out. */
async function askNewPassword(): Promise<string | undefined> {
  const password = await askIfTerminal('Password: ', true);
  if (password === undefined) return undefined;
  const again = await askIfTerminal('Password again: ', true);
  if (again !== password) throw usageError('The two passwords differ.');
  return password;
}

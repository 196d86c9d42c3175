/**
 * The command tree of `workspace-api` (commander): the global options every command takes, and
 * one register function per command group (commands/).
 */
import { Command } from 'commander';
import { contractVersion } from '../index.ts';
import type { RunState } from './command-kit.ts';
import { registerAuthCommands } from './commands/auth.ts';
import { registerDocumentCommands } from './commands/documents.ts';
import { registerJobCommands } from './commands/jobs.ts';
import { registerOrgCommands } from './commands/orgs.ts';
import { registerSearchCommand } from './commands/search.ts';
import { registerSignupCommand } from './commands/signup.ts';
import { registerWorkspaceCommands } from './commands/workspaces.ts';
import { ExitCode } from './exit-codes.ts';

const EXIT_CODES = `
Exit codes:
  ${ExitCode.ok}  success (jobs run / jobs follow / documents upload --index / workspaces index: the job succeeded)
  ${ExitCode.apiError}  the service answered an error
  ${ExitCode.usage}  usage error: unknown command or option, missing or malformed argument
  ${ExitCode.notSignedIn}  not signed in, or the token was refused (401 UNAUTHORIZED); signup awaiting email verification
  ${ExitCode.jobFailed}  the job failed or was canceled
  ${ExitCode.network}  the service could not be reached
  ${ExitCode.localFile}  a local file could not be read or written
  ${ExitCode.interrupted}  Ctrl-C while following a job (the job goes on on the service)

Environment: WORKSPACE_API_URL, WORKSPACE_API_TOKEN, WORKSPACE_API_ORG (as the options),
WORKSPACE_API_EMAIL and WORKSPACE_API_PASSWORD (signup, login). Documentation: docs/cli.md.`;

export function buildProgram(state: RunState): Command {
  const program = new Command('workspace-api');
  program
    .description('The command-line tool of the workspace API: sign up or sign in, create organizations, manage workspaces and documents, run and follow jobs, search.')
    .version(contractVersion, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help for the command')
    .helpCommand(false)
    .option('--url <url>', "the service's address (default: WORKSPACE_API_URL, the address saved by login, http://127.0.0.1:3000)")
    .option('--token <token>', 'a session token (default: WORKSPACE_API_TOKEN, the token saved by login)')
    .option('--org <org>', 'the organization, by id or slug (default: WORKSPACE_API_ORG, your only organization)')
    .option('--json', 'the answer as JSON on stdout (errors as JSON on stderr), no spinner or progress bar')
    // Inherited by every command created below: their help lists these global options too, and a
    // usage error or --help ends in main.ts's hands (exit code 2, or 0 for --help).
    .configureHelp({ showGlobalOptions: true })
    .exitOverride()
    .configureOutput({
      outputError: (message, write) => write(state.json ? `${JSON.stringify({ error: { code: 'USAGE', message: message.replace(/^error: /, '').trim(), exitCode: ExitCode.usage } })}\n` : message),
    })
    .addHelpText('afterAll', EXIT_CODES);
  if (!state.json) program.showHelpAfterError('(add --help for usage)');

  registerSignupCommand(program, state);
  registerAuthCommands(program, state);
  registerOrgCommands(program, state);
  registerWorkspaceCommands(program, state);
  registerDocumentCommands(program, state);
  registerJobCommands(program, state);
  registerSearchCommand(program, state);
  return program;
}

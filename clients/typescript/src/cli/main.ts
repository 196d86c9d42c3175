#!/usr/bin/env node
/**
 * `workspace-api`, the command-line tool of the workspace API (the package's `bin`; bundled into
 * dist/cli.js by scripts/build.mjs). Runs one command and exits with a code from exit-codes.ts.
 */
import { CommanderError } from 'commander';
import type { RunState } from './command-kit.ts';
import { ExitCode } from './exit-codes.ts';
import { describeFailure, reportFailure } from './failure.ts';
import { buildProgram } from './program.ts';

// A reader that went away (`workspace-api search ... | head -1`) ends the command quietly, as
// for any Unix tool, instead of an unhandled EPIPE with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(process.exitCode ?? ExitCode.ok);
});

// Known before parsing, so a usage error is reported in the form asked for.
const state: RunState = { json: process.argv.includes('--json'), url: undefined, env: process.env };

try {
  await buildProgram(state).parseAsync(process.argv);
  process.exitCode = state.exitCode ?? ExitCode.ok;
} catch (error) {
  if (error instanceof CommanderError) {
    // commander printed the help, the version or the usage error already.
    process.exitCode = error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  } else {
    const failure = describeFailure(error, state.url);
    reportFailure(failure, state.json);
    process.exitCode = failure.exitCode;
  }
}

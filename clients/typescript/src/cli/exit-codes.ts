/**
 * The exit codes of `workspace-api`, a promise to scripts: docs/cli.md lists them, and a change
 * here is a breaking change of the tool.
 */
export const ExitCode = {
  /** The command did what it was asked (for `jobs follow`/`jobs run`/`documents upload --index`/`workspaces index`: the job succeeded). */
  ok: 0,
  /** The service answered an error (any but 401 UNAUTHORIZED), e.g. a wrong password at login. */
  apiError: 1,
  /** The command line was wrong: unknown command or option, a missing or malformed argument. */
  usage: 2,
  /**
   * No token, or the service refused the token (401 UNAUTHORIZED): run `workspace-api login`. Also
   * `signup` on a deployment that requires a verified email address: the account exists, unsigned-in.
   */
  notSignedIn: 3,
  /** The job ended `failed` or `canceled` (`jobs run`, `jobs follow`, `documents upload --index`, `workspaces index`). */
  jobFailed: 4,
  /** The service could not be reached (connection refused, DNS, TLS, reset, timeout). */
  network: 5,
  /** A local file could not be read or written (upload source, download target, credentials). */
  localFile: 6,
  /**
   * Ctrl-C (SIGINT) while following a job: the tool stopped watching, the job goes on on the
   * service. 128 + the signal's number, what a shell reports for a process ended by it.
   */
  interrupted: 130,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * An error the CLI itself raises, with the exit code it ends in. `code` is a stable identifier
 * printed (and put in --json error output) like the service's error codes.
 */
export class CliError extends Error {
  override name = 'CliError';
  readonly exitCode: ExitCodeValue;
  readonly code: string;
  readonly data: unknown;

  constructor(exitCode: ExitCodeValue, code: string, message: string, data?: unknown) {
    super(message);
    this.exitCode = exitCode;
    this.code = code;
    this.data = data;
  }
}

export const usageError = (message: string, data?: unknown) => new CliError(ExitCode.usage, 'USAGE', message, data);

/**
 * What every command's action shares: the session from the global options, and the run state
 * main.ts reads when a command fails (was it --json, which address did it talk to).
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { ExitCodeValue } from './exit-codes.ts';
import { createOutput } from './output.ts';
import { openSession, type GlobalOptions, type Session } from './session.ts';

export interface RunState {
  json: boolean;
  url: string | undefined;
  env: NodeJS.ProcessEnv;
  /** A non-zero exit code for a command that answered but did not succeed (a failed job). */
  exitCode?: ExitCodeValue;
}

/**
 * Wraps a command's action: commander calls it with the arguments, the command's own options and
 * the command; the wrapper opens the session from the global options and passes it first.
 */
export function withSession<Args extends unknown[]>(state: RunState, action: (session: Session, ...args: Args) => Promise<void>) {
  return async (...received: unknown[]) => {
    const command = received[received.length - 1] as Command;
    const options = command.optsWithGlobals<GlobalOptions>();
    state.json = options.json === true;
    const session = await openSession(options, createOutput(state.json), state.env);
    state.url = session.url;
    await action(session, ...(received.slice(0, -1) as Args));
  };
}

/** A commander parser for a whole-number option from 1 to `max` (`--limit 5`); anything else is a usage error. */
export function wholeNumber(max: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) throw new InvalidArgumentError(`expected a whole number from 1 to ${max}.`);
    return Number(value);
  };
}

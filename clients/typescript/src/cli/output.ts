/**
 * Where the CLI writes. stdout carries the command's answer only: the JSON document with --json,
 * or the human-readable text. Notes, hints, prompts, spinners and progress bars go to stderr, and
 * spinners and bars only when a person is watching (stdout is a terminal and --json is off), so a
 * script that captures stdout gets exactly the answer.
 */
export interface Output {
  readonly json: boolean;
  /** A person is watching: stdout and stderr are terminals (with a width) and --json is off. */
  readonly interactive: boolean;
  /** The width to fit tables in, when stdout is a terminal. */
  readonly columns: number | undefined;
  /** The command's answer: `value` as JSON with --json, else what `human` writes. */
  result(value: unknown, human: () => void): void;
  /** One line of the human answer on stdout. */
  line(text?: string): void;
  /** Raw text on stdout (e.g. a document's text, which ends as it ends). */
  write(text: string): void;
  /** A remark for the person on stderr (never with --json, whose stderr carries only errors). */
  note(text: string): void;
}

export function createOutput(json: boolean, stdout: NodeJS.WriteStream = process.stdout, stderr: NodeJS.WriteStream = process.stderr): Output {
  return {
    json,
    // A terminal that reports no width (a pty nobody sized, as `script` or `docker -t` may make)
    // counts as none: spinners size their redraws by it, and a width of 0 would never end one.
    interactive: !json && stdout.isTTY === true && stderr.isTTY === true && (stderr.columns ?? 0) > 0,
    columns: stdout.isTTY ? stdout.columns : undefined,
    result(value, human) {
      if (json) stdout.write(`${JSON.stringify(value, null, 2)}\n`);
      else human();
    },
    line(text = '') {
      stdout.write(`${text}\n`);
    },
    write(text) {
      stdout.write(text);
    },
    note(text) {
      if (!json) stderr.write(`${text}\n`);
    },
  };
}

/**
 * Asking the person at the terminal (email, password) on stderr, so stdout stays the answer's.
 * The password is read with echo off: the prompt's own output stream drops what readline echoes.
 */
import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import { text } from 'node:stream/consumers';

export async function ask(question: string, options: { hidden?: boolean } = {}): Promise<string> {
  let muted = false;
  const echo = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const lines = createInterface({ input: process.stdin, output: echo, terminal: process.stdin.isTTY === true });
  try {
    const answer = lines.question(question);
    muted = options.hidden === true;
    const value = await answer;
    // A password is taken as typed; an email address loses stray blanks.
    return options.hidden ? value : value.trim();
  } finally {
    lines.close();
    if (options.hidden) process.stderr.write('\n');
  }
}

/** Asks at a terminal; without one there is nobody to ask, and the caller reports what is missing. */
export async function askIfTerminal(question: string, hidden = false): Promise<string | undefined> {
  if (!process.stdin.isTTY) return undefined;
  return ask(question, { hidden });
}

/** All of stdin, without its final line break (`echo secret | workspace-api login --password-stdin`). */
export async function readStdin(): Promise<string> {
  return (await text(process.stdin)).replace(/\r?\n$/, '');
}

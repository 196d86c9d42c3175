/**
 * The shell commands a reader of the README can type: every line of its ```sh blocks (continued
 * lines joined, comments and answers left out) and every inline `code` span that starts like a
 * command (make, npm, npx, node, curl, scripts/..., apt-get, or settings before one of them).
 */
import { readFileSync } from 'node:fs';

export interface ReadmeCommand {
  /** The command as written, continuation lines joined with a space. */
  text: string;
  /** 1-based line of the README where it starts. */
  line: number;
  /** From a ```sh block, or an inline code span. */
  from: 'block' | 'inline';
  /** The answer the README shows for it: the `# ` comment lines that follow it in its block. */
  answer: string[];
}

const STARTS_A_COMMAND = /^(?:[A-Z][A-Z0-9_]*=\S*\s+)*(?:make|npm|npx|node|node_modules\/\.bin\/\S+|curl|scripts\/\S+|apt-get|printf|wc|cmp)(?:\s|$)/;

export function readmeCommands(path: URL): ReadmeCommand[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const commands: ReadmeCommand[] = [];
  let fence: { indent: number; shell: boolean } | undefined;
  let pending: { text: string; line: number } | undefined;
  // The last command of the open block: the comment lines after it are its answer.
  let current: ReadmeCommand | undefined;
  const push = (command: ReadmeCommand) => {
    commands.push(command);
    if (command.from === 'block') current = command;
  };
  lines.forEach((raw, index) => {
    const opening = /^(\s*)```(\w*)\s*$/.exec(raw);
    if (!fence && opening) {
      fence = { indent: opening[1]!.length, shell: opening[2] === 'sh' };
      current = undefined;
      return;
    }
    if (fence && /^\s*```\s*$/.test(raw)) {
      fence = undefined;
      return;
    }
    if (fence) {
      if (!fence.shell) return;
      const line = raw.slice(fence.indent);
      if (pending) {
        pending.text += ` ${line.trim().replace(/\\$/, '').trim()}`;
        if (!line.trimEnd().endsWith('\\')) {
          push({ text: pending.text, line: pending.line, from: 'block', answer: [] });
          pending = undefined;
        }
        return;
      }
      if (line.trim() === '') return;
      if (line.trimStart().startsWith('#')) {
        current?.answer.push(line.trimStart().replace(/^# ?/, ''));
        return;
      }
      // A comment after the command (`make start   # installs ...`) is not part of it.
      const text = line.replace(/\s{2,}#.*$/, '').trim();
      if (text.endsWith('\\')) pending = { text: text.replace(/\\$/, '').trim(), line: index + 1 };
      else push({ text, line: index + 1, from: 'block', answer: [] });
      return;
    }
    for (const match of raw.matchAll(/`([^`]+)`/g)) {
      const text = match[1]!.trim();
      // A bare `node` or `curl -s` in a sentence names a program, not a command to type.
      if (STARTS_A_COMMAND.test(text) && !/^(node|npm|curl -s)$/.test(text)) push({ text, line: index + 1, from: 'inline', answer: [] });
    }
  });
  return commands;
}

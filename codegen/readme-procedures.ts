/**
 * The README's list of procedures, between `<!-- generated: procedures -->` and
 * `<!-- /generated: procedures -->`: written from the route table's records, so the list (and its
 * count) cannot drift from the contract. Procedures that share a prefix are joined the way a
 * reader scans them: `workspaces.list/get/create`.
 */
import type { Operation } from './operations.ts';

const START = '<!-- generated: procedures -->';
const END = '<!-- /generated: procedures -->';

export function withProcedureList(readme: string, procedures: Operation[]): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`README.md has no ${START} ... ${END} block for codegen/readme-procedures.ts to fill`);
  return `${readme.slice(0, start + START.length)}${procedureList(procedures)}${readme.slice(end)}`;
}

/** `all N procedures: `a.b`, `c.d/e` and `f.g`;` on lines of its own, wrapped as the continuation of a list item. */
export function procedureList(procedures: Operation[]): string {
  const groups = new Map<string, string[]>();
  for (const { name } of procedures) {
    const cut = name.lastIndexOf('.');
    const prefix = name.slice(0, cut);
    groups.set(prefix, [...(groups.get(prefix) ?? []), name.slice(cut + 1)]);
  }
  const items = [...groups].map(([prefix, verbs]) => `\`${prefix}.${verbs.join('/')}\``);
  const list = items.length > 1 ? `${items.slice(0, -1).join(', ')} and ${items.at(-1)}` : items.join('');
  return `\n  ${wrap(`all ${procedures.length} procedures: ${list};`, 2, 100)}`;
}

/** Words into lines of at most `width` characters, each after the first indented by `indent` spaces. */
function wrap(text: string, indent: number, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width - indent) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines.join(`\n${' '.repeat(indent)}`);
}

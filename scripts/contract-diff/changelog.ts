/**
 * docs/contract-changelog.md, written from the same diff the verdict reads. The part between the
 * two markers ("Unreleased": the current bundles against the released snapshot) is rewritten by
 * every `make contract-diff`; `make contract-release` turns it into a dated entry below the
 * releases marker. Everything else in the file is left as it is.
 */
import type { ChangeKind, ContractChange, ContractDiff } from './compare.ts';
import { counts } from './verdict.ts';

export const BEGIN = '<!-- contract-diff:begin: written by `make contract-diff` from the diff; edits here are overwritten -->';
export const END = '<!-- contract-diff:end -->';
export const RELEASES = '<!-- contract-release: each release is added below this line -->';

const GROUPS: Array<[ChangeKind, string]> = [
  ['breaking', 'Breaking'],
  ['deprecated', 'Deprecated'],
  ['non-breaking', 'Non-breaking'],
  ['annotation', 'Annotations (descriptions, examples, metadata)'],
  ['unclassified', 'Unclassified (the tool could not tell: review by hand)'],
];

const SKELETON = `# Contract changelog

What changed in the two published contracts, \`generated/openapi.json\` (the procedures, served at
\`/api/v1/openapi.json\`) and \`generated/auth-openapi.json\` (the identity routes, served at
\`/api/auth/openapi.json\`), release by release. The first section compares the current bundles with
the released snapshot in \`openapi/released/\`; \`make contract-diff\` writes it from the same
api-smart-diff comparison that fails CI on an unreleased breaking change, and CI fails when the
committed section is stale. What counts as breaking, and how to release:
[contract-changes.md](contract-changes.md).

${BEGIN}
${END}

## Releases

${RELEASES}
`;

/** The changes of one bundle, grouped by kind, then by operation. `level` is the heading of each group. */
export function renderChanges(diff: ContractDiff, level: string): string {
  if (diff.changes.length === 0) return 'No changes.\n';
  const out: string[] = [];
  for (const [kind, title] of GROUPS) {
    const changes = diff.changes.filter((change) => change.kind === kind);
    if (changes.length === 0) continue;
    out.push(`${level} ${title}`, '');
    const byOperation = new Map<string, ContractChange[]>();
    for (const change of changes) byOperation.set(change.operation, [...(byOperation.get(change.operation) ?? []), change]);
    for (const [operation, list] of byOperation) {
      const id = list.find((change) => change.operationId)?.operationId;
      out.push(`- ${operation === 'document' ? 'The document' : `\`${operation}\``}${id ? ` (${id})` : ''}`);
      for (const change of list) {
        out.push(`  - ${change.description}${change.location ? ` (at \`${change.location}\`)` : ''}`);
      }
    }
    out.push('');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

/** A titled section: `level` for its title, one level down per bundle, two down per kind of change. */
function section(level: number, title: string, diffs: ContractDiff[]): string {
  const heading = (depth: number): string => '#'.repeat(level + depth);
  const parts = [`${heading(0)} ${title}`, ''];
  for (const diff of diffs) {
    parts.push(`${heading(1)} \`${diff.name}\`: ${diff.releasedVersion} → ${diff.currentVersion} (${counts(diff.changes)})`, '');
    parts.push(renderChanges(diff, heading(2)));
  }
  return parts.join('\n').trimEnd();
}

/** The file with its Unreleased section rewritten from `diffs` (the skeleton when there is no file yet). */
export function writeUnreleased(file: string | undefined, diffs: ContractDiff[]): string {
  const text = file ?? SKELETON;
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/contract-changelog.md lacks the markers ${BEGIN} … ${END}`);
  const released = diffs.map((diff) => diff.releasedVersion).filter((version, i, all) => all.indexOf(version) === i);
  const body = section(2, `Unreleased: the current contract against the ${released.join(', ')} snapshot`, diffs);
  return `${text.slice(0, start + BEGIN.length)}\n${body}\n${text.slice(end)}`;
}

/** The file with a dated entry for `version` (the changes of `diffs`) added at the top of the releases. */
export function recordRelease(file: string | undefined, diffs: ContractDiff[], version: string, date: string): string {
  const text = file ?? SKELETON;
  const at = text.indexOf(RELEASES);
  if (at < 0) throw new Error(`docs/contract-changelog.md lacks the marker ${RELEASES}`);
  const entry = section(3, `${version} (released ${date})`, diffs);
  return `${text.slice(0, at + RELEASES.length)}\n\n${entry}\n${text.slice(at + RELEASES.length).replace(/^\n*/, '\n')}`;
}

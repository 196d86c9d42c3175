/**
 * Whether the contract may ship: a breaking change passes only when `info.version` moved by a major
 * step from the released snapshot's (0.4.2 → 1.0.0, 1.3.0 → 2.0.0). A minor or patch step, or no
 * step, lets none through, 0.x versions included: every partner's generated SDK breaks the same way.
 */
import type { ChangeKind, ContractChange, ContractDiff } from './compare.ts';

export interface Verdict {
  ok: boolean;
  /** What to print: one summary line per bundle, then every breaking change that is not allowed. */
  report: string;
}

const KINDS: ChangeKind[] = ['breaking', 'deprecated', 'non-breaking', 'annotation', 'unclassified'];

/** `major.minor.patch` with an optional pre-release or build suffix; undefined for anything else. */
export function parseVersion(version: string): { major: number; minor: number; patch: number } | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(version);
  return match ? { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]) } : undefined;
}

/** True when `current` is a later major version than `released`. */
export function isMajorStep(released: string, current: string): boolean {
  const before = parseVersion(released);
  const after = parseVersion(current);
  return before !== undefined && after !== undefined && after.major > before.major;
}

export function counts(changes: ContractChange[]): string {
  const parts = KINDS.map((kind) => [kind, changes.filter((change) => change.kind === kind).length] as const)
    .filter(([, count]) => count > 0)
    .map(([kind, count]) => `${count} ${kind}`);
  return parts.length > 0 ? parts.join(', ') : 'no changes';
}

export function changeLine(change: ContractChange): string {
  const operation = change.operationId ? `${change.operation} (${change.operationId})` : change.operation;
  return `${operation}${change.location ? ` at ${change.location}` : ''}: ${change.description}`;
}

export function judge(diffs: ContractDiff[]): Verdict {
  const lines: string[] = [];
  let ok = true;
  for (const diff of diffs) {
    const breaking = diff.changes.filter((change) => change.kind === 'breaking');
    lines.push(`${diff.name} ${diff.releasedVersion} → ${diff.currentVersion}: ${counts(diff.changes)}`);
    if (breaking.length === 0) continue;
    if (isMajorStep(diff.releasedVersion, diff.currentVersion)) {
      lines.push(`  ${breaking.length} breaking change(s) allowed by the major step ${diff.releasedVersion} → ${diff.currentVersion}.`);
      continue;
    }
    ok = false;
    const released = parseVersion(diff.releasedVersion);
    const next = released ? `${released.major + 1}.0.0` : 'a new major version';
    lines.push(`  BREAKING, and info.version did not move by a major step: either undo these, or release them as ${next}` + ' (package.json "version", then make codegen; docs/contract-changes.md):');
    for (const change of breaking) lines.push(`    ${changeLine(change)}`);
  }
  return { ok, report: lines.join('\n') };
}

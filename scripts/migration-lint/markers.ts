/**
 * Exceptions, written where the reviewer reads the statement: a comment line
 *
 *   -- lint: allow <rule-id> because <reason, a few words at least>
 *
 * among the comment lines right above the statement it excuses (no blank line between). It
 * excuses that rule's findings on that statement only. A marker must earn its place: one without a
 * reason, one that excuses nothing (a stale marker would excuse the next, unrelated change), and
 * one naming no rule are findings themselves, which no marker excuses.
 */
import { isRuleId, RULES, type OtherRuleId, type Refusal, type RuleId } from './rules.ts';
import type { Statement } from './sql-file.ts';

/** Fewer words than this is a label, not a reason ("because needed"). */
const MIN_REASON_WORDS = 3;

interface Marker {
  line: number;
  rule: RuleId;
  reason: string;
}

export interface MarkerFinding {
  line: number;
  rule: OtherRuleId;
  message: string;
}

export interface Marked {
  /** The refusals no marker excused, each with its statement. */
  refusals: { statement: Statement; refusal: Refusal }[];
  findings: MarkerFinding[];
}

export function applyMarkers(lines: string[], judged: { statement: Statement; refusals: Refusal[] }[]): Marked {
  const findings: MarkerFinding[] = [];
  const markers: Marker[] = [];
  lines.forEach((text, index) => {
    const marker = /^\s*--\s*lint\s*:\s*(.*)$/i.exec(text);
    if (!marker) return;
    const line = index + 1;
    const allow = /^allow\s+(\S+)(?:\s+because\b(.*))?$/i.exec(marker[1]!.trim());
    if (!allow || !isRuleId(allow[1]!)) {
      const what = allow ? `names no rule of this linter ("${allow[1]}")` : 'is not "-- lint: allow <rule-id> because <reason>"';
      findings.push({ line, rule: 'marker-unknown-rule', message: `the marker \`${text.trim()}\` ${what}; the rule ids are ${Object.keys(RULES).join(', ')}` });
      return;
    }
    markers.push({ line, rule: allow[1], reason: (allow[2] ?? '').trim() });
  });

  const used = new Set<Marker>();
  const refusals: Marked['refusals'] = [];
  for (const { statement, refusals: own } of judged) {
    const above = markersAbove(lines, statement.line, markers);
    for (const refusal of own) {
      const excusing = above.filter((marker) => marker.rule === refusal.rule && hasReason(marker));
      excusing.forEach((marker) => used.add(marker));
      if (excusing.length === 0) refusals.push({ statement, refusal });
    }
    // A marker without a reason excuses nothing, but it is reported for that, not as unused.
    for (const marker of above) if (!hasReason(marker) && own.some((refusal) => refusal.rule === marker.rule)) used.add(marker);
  }

  for (const marker of markers) {
    if (!hasReason(marker)) {
      findings.push({
        line: marker.line,
        rule: 'marker-without-reason',
        message: `the marker for ${marker.rule} gives no reason (at least ${MIN_REASON_WORDS} words after "because"), so it excuses nothing; say why the statement is safe here`,
      });
    } else if (!used.has(marker)) {
      findings.push({
        line: marker.line,
        rule: 'marker-unused',
        message: `the marker for ${marker.rule} excuses nothing: the statement right below it (no blank line between) has no ${marker.rule} finding; remove the marker or move it above the statement it is for`,
      });
    }
  }
  return { refusals, findings };
}

const hasReason = (marker: Marker): boolean => marker.reason.split(/\s+/).filter(Boolean).length >= MIN_REASON_WORDS;

/** The markers among the unbroken run of comment lines right above a statement's first line. */
function markersAbove(lines: string[], statementLine: number, markers: Marker[]): Marker[] {
  let top = statementLine;
  while (top > 1 && /^\s*--/.test(lines[top - 2]!)) top--;
  return markers.filter((marker) => marker.line >= top && marker.line < statementLine);
}

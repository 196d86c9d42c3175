/**
 * The migration linter (docs/migrations.md): reads every migration in number order with
 * PostgreSQL's parser, keeps track of the tables each one leaves behind, and judges those numbered
 * after the previous release's last migration (releases/previous.json) by the rules of rules.ts.
 * The frozen ones ran in production already: judging them could only ask for an edit that their
 * checksums (sql/checksums.txt) forbid.
 */
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readMigrationFiles } from '../../src/db/migration-files.ts';
import type { FileContext } from './file-context.ts';
import { applyMarkers } from './markers.ts';
import { runsOutsideTransaction } from './non-transactional.ts';
import { openReleaseSource, readPreviousRelease, type ReleaseSource } from './previous-release.ts';
import { RULES, type OtherRuleId, type RuleId } from './rules.ts';
import { applyStatement, describeTable, emptyHistory, provenNotNull, tablesCreatedIn, type SchemaHistory } from './schema-history.ts';
import { parseSql, type Statement } from './sql-file.ts';
import { checkStatement } from './statement-checks.ts';

export const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface LintOptions {
  /** The migrations: the repository's sql/ unless given. */
  dir?: string;
  /** The previous release's record: the repository's releases/previous.json unless given. */
  previous?: string;
  /** The git repository that holds the previous release's commit: this one unless given. */
  repo?: string;
}

export interface Finding {
  /** The migration file's path, as given (dir joined with its name). */
  path: string;
  line: number;
  rule: RuleId | OtherRuleId;
  message: string;
}

export interface LintReport {
  findings: Finding[];
  /** The files judged (numbered after lastMigration), as file names. */
  checked: string[];
  /** The files read but not judged. */
  frozen: string[];
  lastMigration: string;
}

export async function lintMigrations(options: LintOptions = {}): Promise<LintReport> {
  const dir = options.dir ?? join(repositoryRoot, 'sql');
  const previous = readPreviousRelease(options.previous ?? join(repositoryRoot, 'releases', 'previous.json'));
  const source = openReleaseSource(options.repo ?? repositoryRoot, previous.commit);
  const report: LintReport = { findings: [], checked: [], frozen: [], lastMigration: previous.lastMigration };
  const history = emptyHistory();
  for (const file of await readMigrationFiles(dir)) {
    const path = join(dir, file.fileName);
    const frozen = file.version <= previous.lastMigration;
    (frozen ? report.frozen : report.checked).push(file.fileName);
    const parsed = await parseSql(file.contents);
    if (!parsed.ok) {
      // Reported for frozen files too: the tables they create would be missing from the history.
      report.findings.push({ path, line: parsed.line, rule: 'sql-syntax', message: `PostgreSQL's parser refuses the file (${parsed.message}), so nothing in it was checked` });
      continue;
    }
    if (frozen) for (const { node } of parsed.statements) applyStatement(history, file.fileName, node);
    else report.findings.push(...judgeFile(file.fileName, path, parsed, history, source));
  }
  return report;
}

/** `sql/0016_x.sql:12: index-not-concurrent: ...`, the path relative to `cwd`. */
export function formatFinding(finding: Finding, cwd: string = process.cwd()): string {
  return `${relative(cwd, finding.path)}:${finding.line}: ${finding.rule}: ${finding.message}`;
}

/** Judges each statement against the history left by the statements before it, then records it. */
function judgeFile(fileName: string, path: string, { statements, lines }: { statements: Statement[]; lines: string[] }, history: SchemaHistory, source: ReleaseSource): Finding[] {
  const created = tablesCreatedIn(history, statements);
  const context: FileContext = {
    existing: (table) => !created.has(table),
    describe: (table) => describeTable(history, table),
    provenNotNull: (table, column) => provenNotNull(history, table, column),
    source,
    notValidHere: new Set(),
  };
  const outsideTransaction = statements.some((statement) => runsOutsideTransaction(statement.node));
  const judged = statements.map((statement) => {
    const refusals = checkStatement(statement.node, context, outsideTransaction);
    applyStatement(history, fileName, statement.node);
    return { statement, refusals };
  });
  const marked = applyMarkers(lines, judged);
  const findings: Finding[] = marked.refusals.map(({ statement, refusal }) => ({
    path,
    line: statement.line,
    rule: refusal.rule,
    message: `\`${statement.excerpt}\` ${refusal.problem}. Instead: ${RULES[refusal.rule].recipe}.`,
  }));
  findings.push(...marked.findings.map((finding) => ({ path, ...finding })));
  return findings.sort((a, b) => a.line - b.line);
}

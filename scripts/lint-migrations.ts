/**
 * `make lint-migrations` (part of `make lint`): the migrations after the previous release's must
 * not stop traffic while they run (docs/migrations.md; the rules in scripts/migration-lint/rules.ts).
 *
 *   node --liftoff-only scripts/lint-migrations.ts [DIR] [--previous FILE]
 *
 * DIR holds the migrations (default sql/), FILE the previous release's record (default
 * releases/previous.json). Prints each finding as `sql/0016_x.sql:12: <rule-id>: <message>` and
 * exits 1 when there is any; otherwise prints one line and exits 0. --liftoff-only (optional) keeps
 * V8 from spending 2 s optimizing the parser's WebAssembly after the 0.2 s of work are done.
 */
import { parseArgs } from 'node:util';
import { formatFinding, lintMigrations } from './migration-lint/lint.ts';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { previous: { type: 'string' } } });

try {
  const report = await lintMigrations({ ...(positionals[0] ? { dir: positionals[0] } : {}), ...(values.previous ? { previous: values.previous } : {}) });
  for (const finding of report.findings) console.error(formatFinding(finding));
  const summary = `${report.checked.length} migration${report.checked.length === 1 ? '' : 's'} checked (numbered after ${report.lastMigration}, the previous release's last; ${report.frozen.length} frozen one${report.frozen.length === 1 ? '' : 's'} read, not judged)`;
  if (report.findings.length > 0) {
    console.error(`lint-migrations: ${report.findings.length} finding(s) in ${summary}; docs/migrations.md has each rule's recipe and the marker that excuses one`);
    process.exitCode = 1;
  } else {
    console.log(summary);
  }
} catch (error) {
  console.error(`lint-migrations: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}

/**
 * `make lint-migrations` (scripts/migration-lint/, docs/migrations.md): every migration after the
 * previous release's last one is refused when it would stop traffic, and the safe recipe for the
 * same change passes. Each case writes a temporary sql/ (a frozen 0001 with the tables, then the
 * case's files) and a previous.json, and lints it in process. The "previous release still uses it"
 * cases read the real repository's git at the commit of releases/previous.json.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatFinding, lintMigrations, repositoryRoot } from '../../scripts/migration-lint/lint.ts';
import { OTHER_RULES, RULES } from '../../scripts/migration-lint/rules.ts';

const release = JSON.parse(readFileSync(join(repositoryRoot, 'releases', 'previous.json'), 'utf8')) as { commit: string; lastMigration: string };
// A shallow clone cannot read the release's commit: the linter then refuses every drop (tested below with a commit nobody has).
const releaseReadable = spawnSync('git', ['-C', repositoryRoot, 'cat-file', '-e', `${release.commit}^{commit}`]).status === 0;

// The released schema the cases change. text_hash is read by that release's src/ (documents/text-store.ts);
// no release's code mentions zz_unused_col.
const FROZEN = `create table documents (id text primary key, name text not null, status text);
create table document_chunks (
  id text primary key,
  document_id text not null references documents (id),
  text text not null,
  text_hash text,
  zz_unused_col text
);
`;

const scratch = mkdtempSync(join(tmpdir(), 'migration-lint-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let runs = 0;

/** A directory with sql/0001_base.sql (frozen) and `files`, and its previous.json. */
function write(files: Record<string, string>, previous: { commit?: string; lastMigration?: string } = {}): { dir: string; sql: string; previous: string } {
  const dir = join(scratch, String(++runs));
  const sql = join(dir, 'sql');
  mkdirSync(sql, { recursive: true });
  writeFileSync(join(sql, '0001_base.sql'), FROZEN);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(sql, name), text);
  writeFileSync(join(dir, 'previous.json'), JSON.stringify({ commit: release.commit, date: '2026-11-28', lastMigration: '0001', ...previous }));
  return { dir, sql, previous: join(dir, 'previous.json') };
}

/** The findings as `file:line rule`, the form the cases want. */
async function lint(files: Record<string, string>, previous?: { commit?: string; lastMigration?: string }): Promise<string[]> {
  const written = write(files, previous);
  const report = await lintMigrations({ dir: written.sql, previous: written.previous });
  return report.findings.map((finding) => `${basename(finding.path)}:${finding.line} ${finding.rule}`);
}

/** One judged file, 0002_change.sql. */
const change = (sql: string) => ({ '0002_change.sql': sql });

interface Case {
  name: string;
  given: Record<string, string>;
  want: string[];
}

// Each refused statement, and beside it the recipe for the same change, which passes.
const rules: Case[] = [
  { name: 'an index built without CONCURRENTLY', given: change('create index documents_name on documents (name);'), want: ['0002_change.sql:1 index-not-concurrent'] },
  { name: 'recipe: the index built concurrently in a file of its own', given: change('create index concurrently if not exists documents_name on documents (name);\n'), want: [] },
  { name: 'an index on a table the same file creates', given: change('create table notes (id text primary key, body text);\ncreate index notes_body on notes (body);'), want: [] },
  { name: 'REINDEX without CONCURRENTLY', given: change('reindex index documents_pkey;'), want: ['0002_change.sql:1 index-not-concurrent'] },
  { name: 'a column type change', given: change('alter table documents alter column status type varchar(20);'), want: ['0002_change.sql:1 column-type-change'] },
  { name: 'recipe: a new column of the new type', given: change('alter table documents add column status_code varchar(20);'), want: [] },
  { name: 'SET NOT NULL', given: change('alter table documents\n  alter column status set not null;'), want: ['0002_change.sql:1 set-not-null'] },
  {
    name: 'recipe: a CHECK NOT VALID, validated in a later file, then SET NOT NULL',
    given: {
      '0002_check.sql': 'alter table documents add constraint documents_status_not_null check (status is not null) not valid;',
      '0003_validate.sql': 'alter table documents validate constraint documents_status_not_null;\nalter table documents alter column status set not null;',
    },
    want: [],
  },
  {
    name: 'SET NOT NULL on a column whose check is not valid yet',
    given: change('alter table documents add constraint documents_status_not_null check (status is not null) not valid;\nalter table documents alter column status set not null;'),
    want: ['0002_change.sql:2 set-not-null'],
  },
  {
    name: 'a stored generated column',
    given: change('alter table document_chunks add column text_length integer generated always as (length(text)) stored;'),
    want: ['0002_change.sql:1 generated-stored-column'],
  },
  { name: 'recipe: a plain nullable column', given: change('alter table document_chunks add column text_length integer;'), want: [] },
  { name: 'a default of gen_random_uuid()', given: change('alter table documents add column token uuid default gen_random_uuid();'), want: ['0002_change.sql:1 volatile-default'] },
  { name: 'a default of random()', given: change('alter table documents add column weight float8 not null default random();'), want: ['0002_change.sql:1 volatile-default'] },
  { name: 'a default of clock_timestamp()', given: change('alter table documents add column seen_at timestamptz default clock_timestamp();'), want: ['0002_change.sql:1 volatile-default'] },
  { name: 'a bigserial column', given: change('alter table documents add column seq bigserial;'), want: ['0002_change.sql:1 volatile-default'] },
  { name: 'an identity column', given: change('alter table documents add column seq bigint generated always as identity;'), want: ['0002_change.sql:1 volatile-default'] },
  {
    name: 'stable and constant defaults',
    given: change(
      "alter table documents add column seen_at timestamptz not null default now(),\n  add column n integer not null default 0,\n  add column kind text default 'plain'::text,\n  add column at timestamptz default current_timestamp + interval '1 day';",
    ),
    want: [],
  },
  {
    name: 'recipe: no default on the column, SET DEFAULT for new rows',
    given: change('alter table documents add column token uuid;\nalter table documents alter column token set default gen_random_uuid();'),
    want: [],
  },
  { name: 'a CHECK without NOT VALID', given: change('alter table document_chunks add constraint chunks_text_short check (length(text) < 100000);'), want: ['0002_change.sql:1 constraint-not-valid'] },
  {
    name: 'a FOREIGN KEY without NOT VALID',
    given: change('alter table document_chunks add constraint chunks_document foreign key (document_id) references documents (id);'),
    want: ['0002_change.sql:1 constraint-not-valid'],
  },
  { name: 'a column added with REFERENCES', given: change('alter table document_chunks add column parent_id text references documents (id);'), want: ['0002_change.sql:1 constraint-not-valid'] },
  {
    name: 'recipe: NOT VALID here, VALIDATE CONSTRAINT in a later file',
    given: {
      '0002_add.sql': 'alter table document_chunks add constraint chunks_text_short check (length(text) < 100000) not valid;',
      '0003_validate.sql': 'alter table document_chunks validate constraint chunks_text_short;',
    },
    want: [],
  },
  {
    name: 'VALIDATE CONSTRAINT in the file that added it NOT VALID',
    given: change('alter table document_chunks add constraint chunks_text_short check (length(text) < 100000) not valid;\n\nalter table document_chunks validate constraint chunks_text_short;'),
    want: ['0002_change.sql:3 validate-same-file'],
  },
  { name: 'a UNIQUE constraint that builds its index', given: change('alter table documents add constraint documents_name_key unique (name);'), want: ['0002_change.sql:1 unique-not-using-index'] },
  { name: 'a PRIMARY KEY column added', given: change('alter table documents add column code text primary key;'), want: ['0002_change.sql:1 unique-not-using-index'] },
  {
    name: 'recipe: the unique index built concurrently, then USING INDEX in a later file',
    given: {
      '0002_index.sql': 'create unique index concurrently if not exists documents_name_key on documents (name);',
      '0003_constraint.sql': 'alter table documents add constraint documents_name_key unique using index documents_name_key;',
    },
    want: [],
  },
  {
    name: 'a concurrent index in a file with other statements',
    given: change('create index concurrently if not exists documents_name on documents (name);\nalter table documents add column note text;'),
    want: ['0002_change.sql:2 non-transactional-mix'],
  },
  { name: 'CREATE INDEX CONCURRENTLY without IF NOT EXISTS', given: change('create index concurrently documents_name on documents (name);'), want: ['0002_change.sql:1 concurrent-not-idempotent'] },
  { name: 'DROP INDEX CONCURRENTLY without IF EXISTS', given: change('drop index concurrently documents_name;'), want: ['0002_change.sql:1 concurrent-not-idempotent'] },
  { name: 'REINDEX CONCURRENTLY, which the runner refuses', given: change('reindex index concurrently documents_pkey;'), want: ['0002_change.sql:1 concurrent-not-idempotent'] },
  {
    name: 'recipe: concurrent statements, each idempotent, alone in their file',
    given: change('drop index concurrently if exists documents_old;\ncreate index concurrently if not exists documents_name on documents (name);'),
    want: [],
  },
  { name: 'a file the parser refuses', given: change('alter tabel documents add column note text;'), want: ['0002_change.sql:1 sql-syntax'] },
];

// `-- lint: allow <rule-id> because <reason>` on the comment lines right above the statement.
const markers: Case[] = [
  {
    name: 'a marker with a reason excuses its statement',
    given: change('-- Small table: a few hundred rows.\n-- lint: allow index-not-concurrent because documents holds a few hundred rows\ncreate index documents_name on documents (name);'),
    want: [],
  },
  {
    name: 'a marker without a reason is an error and excuses nothing',
    given: change('-- lint: allow index-not-concurrent\ncreate index documents_name on documents (name);'),
    want: ['0002_change.sql:1 marker-without-reason', '0002_change.sql:2 index-not-concurrent'],
  },
  {
    name: 'a reason of one word is no reason',
    given: change('-- lint: allow index-not-concurrent because small\ncreate index documents_name on documents (name);'),
    want: ['0002_change.sql:1 marker-without-reason', '0002_change.sql:2 index-not-concurrent'],
  },
  {
    name: 'a marker that excuses nothing is an error',
    given: change('-- lint: allow set-not-null because the table is tiny here\ncreate index concurrently if not exists documents_name on documents (name);'),
    want: ['0002_change.sql:1 marker-unused'],
  },
  {
    name: 'a marker separated from its statement by a blank line excuses nothing',
    given: change('-- lint: allow index-not-concurrent because documents holds a few hundred rows\n\ncreate index documents_name on documents (name);'),
    want: ['0002_change.sql:1 marker-unused', '0002_change.sql:3 index-not-concurrent'],
  },
  {
    name: 'a marker naming no rule is an error',
    given: change('-- lint: allow everything because we are in a hurry today\ncreate table notes (id text primary key);'),
    want: ['0002_change.sql:1 marker-unknown-rule'],
  },
];

// Dropping or renaming what the previous release's src/ mentions, read with git at its commit.
const removals: Case[] = [
  { name: 'dropping a column the previous release uses', given: change('alter table document_chunks drop column text_hash;'), want: ['0002_change.sql:1 drop-used'] },
  { name: 'renaming a column the previous release uses', given: change('alter table document_chunks rename column text_hash to content_hash;'), want: ['0002_change.sql:1 rename-used'] },
  { name: 'dropping a table the previous release uses', given: change('drop table if exists document_chunks;'), want: ['0002_change.sql:1 drop-used'] },
  { name: 'renaming a table the previous release uses', given: change('alter table documents rename to files;'), want: ['0002_change.sql:1 rename-used'] },
  { name: 'dropping a column no release code mentions', given: change('alter table document_chunks drop column zz_unused_col;'), want: [] },
  { name: 'renaming a column no release code mentions', given: change('alter table document_chunks rename column zz_unused_col to zz_other_col;'), want: [] },
  { name: 'dropping a table this file created', given: change('create table documents_copy (id text);\ndrop table documents_copy;'), want: [] },
];

describe('lint-migrations', () => {
  describe.each([
    ['rules', rules],
    ['markers', markers],
  ])('%s', (_group, cases) => {
    it.each(cases)('$name', async ({ given, want }) => {
      expect(await lint(given)).toEqual(want);
    });
  });

  describe.skipIf(!releaseReadable)('the previous release still uses it', () => {
    it.each(removals)('$name', async ({ given, want }) => {
      expect(await lint(given)).toEqual(want);
    });
  });

  it("refuses any drop when the previous release's source cannot be read, and says so", async () => {
    const written = write(change('alter table document_chunks drop column zz_unused_col;'), { commit: '0'.repeat(40) });
    const report = await lintMigrations({ dir: written.sql, previous: written.previous });
    expect(report.findings.map((finding) => finding.rule)).toEqual(['drop-used']);
    expect(report.findings[0]!.message).toContain("the previous release's source (commit 000000000000, releases/previous.json) could not be read");
  });

  it('names the file, the line, the statement and the recipe', async () => {
    const written = write(change('-- A comment above.\n\ncreate index documents_name\n  on documents (name);'));
    const [finding, ...rest] = (await lintMigrations({ dir: written.sql, previous: written.previous })).findings;
    expect(rest).toEqual([]);
    expect(formatFinding(finding!, written.dir)).toBe(
      'sql/0002_change.sql:3: index-not-concurrent: `create index documents_name` builds the index documents_name on documents (created by 0001_base.sql) without CONCURRENTLY: ' +
        `its lock blocks every write to the table until the build ends. Instead: ${RULES['index-not-concurrent'].recipe}.`,
    );
  });

  it('does not judge the frozen migrations, numbered up to lastMigration', async () => {
    const given = {
      ...change('create index documents_name on documents (name);\nalter table documents alter column status set not null;'),
      '0003_later.sql': 'alter table documents add column note text;',
    };
    expect(await lint(given, { lastMigration: '0002' })).toEqual([]);
    expect(await lint(given, { lastMigration: '0001' })).toEqual(['0002_change.sql:1 index-not-concurrent', '0002_change.sql:2 set-not-null']);
  });

  it("passes the repository's own sql/", async () => {
    const report = await lintMigrations();
    expect(report.findings.map((finding) => formatFinding(finding))).toEqual([]);
    expect(report.frozen.length).toBeGreaterThanOrEqual(15);
  });

  it.skipIf(!releaseReadable)("refuses a migration shaped like 0014 when it comes after the previous release's last", async () => {
    // 0014 dropped and re-added document_chunks' generated stored columns (a 144 s rewrite) and built an index without CONCURRENTLY.
    const shaped = readFileSync(join(repositoryRoot, 'sql', '0014_text_search_languages.sql'), 'utf8');
    const written = write({});
    rmSync(join(written.sql, '0001_base.sql'));
    for (const name of readdirSync(join(repositoryRoot, 'sql')).filter((file) => file.endsWith('.sql') && file < '0014')) copyFileSync(join(repositoryRoot, 'sql', name), join(written.sql, name));
    writeFileSync(join(written.sql, '0014_text_search_languages.sql'), shaped);
    writeFileSync(written.previous, JSON.stringify({ commit: release.commit, lastMigration: '0013' }));
    const report = await lintMigrations({ dir: written.sql, previous: written.previous });
    expect(report.checked).toEqual(['0014_text_search_languages.sql']);
    expect(report.findings.map((finding) => `${finding.line} ${finding.rule}`)).toEqual([
      '21 drop-used',
      '21 drop-used',
      '22 generated-stored-column',
      '22 generated-stored-column',
      '26 index-not-concurrent',
      '33 index-not-concurrent',
    ]);
    expect(report.findings[2]!.message).toContain('adds the column search_vector to document_chunks (created by 0005_jobs.sql) as a stored generated column');
  });

  it('runs as a command: findings and exit 1, or one line and exit 0', () => {
    const run = (written: { dir: string; previous: string }) =>
      spawnSync(join(repositoryRoot, 'node_modules', '.bin', 'node'), ['--liftoff-only', join(repositoryRoot, 'scripts', 'lint-migrations.ts'), 'sql', '--previous', written.previous], {
        cwd: written.dir,
        encoding: 'utf8',
      });
    const refused = run(write(change('alter table documents alter column status type varchar(20);')));
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^sql\/0002_change\.sql:1: column-type-change: `alter table documents alter column status type varchar\(20\);` changes the type of status/m);
    const passed = run(write(change('alter table documents add column note text;')));
    expect([passed.status, passed.stdout.trim().split('\n')]).toEqual([0, [expect.stringMatching(/^1 migration checked/)]]);
  });

  it('lists every rule in docs/migrations.md and at the top of rules.ts', () => {
    const docs = readFileSync(join(repositoryRoot, 'docs', 'migrations.md'), 'utf8');
    const header = readFileSync(join(repositoryRoot, 'scripts', 'migration-lint', 'rules.ts'), 'utf8').split('*/')[0]!;
    for (const id of [...Object.keys(RULES), ...OTHER_RULES]) {
      expect(docs, id).toContain(`\`${id}\``);
      expect(header, id).toContain(id);
    }
  });
});

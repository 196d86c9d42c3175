/**
 * The rules `make lint-migrations` applies to every migration numbered after the previous
 * release's last one (docs/migrations.md holds the same table; a test checks both list every id).
 * Style guide, habit 17: a release only adds; what it removes waits for a later release; a
 * statement never holds a lock that stops traffic for as long as the table is big. 0014 and 0015
 * show the cost when it does: 144 s and 37 s of 503s on 50 000 chunks (toolchain.md, 2026-12-06).
 *
 * "Existing table": created by an earlier migration file (or by none here, e.g. an extension's);
 * a table created in the same file is empty while the file runs, so the first six rules spare it.
 *
 * | rule id | refuses | why | safe recipe |
 * |---|---|---|---|
 * | index-not-concurrent | CREATE INDEX on an existing table without CONCURRENTLY; REINDEX without CONCURRENTLY | the build holds a lock that blocks every write to the table until it ends | CREATE INDEX CONCURRENTLY IF NOT EXISTS in a migration file of its own; instead of a REINDEX, build a new index so, then DROP INDEX CONCURRENTLY IF EXISTS the old one |
 * | column-type-change | ALTER COLUMN ... TYPE on an existing table | rewrites the table and its indexes under ACCESS EXCLUSIVE: reads wait too; the previous release may not read the new type | add a column of the new type, have the code write both, backfill it in batches (a background migration), move the reads, drop the old column in a later release. A change that rewrites nothing (varchar(n) to text, a longer varchar) may be excused with a marker that says so |
 * | set-not-null | SET NOT NULL (or PostgreSQL 18's ADD CONSTRAINT ... NOT NULL) on an existing table, unless a valid CHECK (col IS NOT NULL) covers the column | scans every row under ACCESS EXCLUSIVE | add the column nullable without a default, backfill it in batches with a background migration, then add a CHECK (col IS NOT NULL) NOT VALID, validate it in a later migration, then SET NOT NULL (PostgreSQL 12+ then uses the valid check instead of scanning) |
 * | generated-stored-column | ADD COLUMN ... GENERATED ALWAYS AS (...) STORED, ALTER COLUMN ... SET EXPRESSION on an existing table | computes every row: a rewrite under ACCESS EXCLUSIVE (0014's 144 s) | a plain nullable column that the code writes, backfilled in batches; or compute the expression in the query and index it with CREATE INDEX CONCURRENTLY |
 * | volatile-default | ADD COLUMN on an existing table with a volatile default (any function call off a short list of stable ones: gen_random_uuid(), random(), clock_timestamp(), ...), a serial type or an identity | a volatile default is computed for each row: a rewrite under ACCESS EXCLUSIVE. Constants, casts of constants and stable defaults such as now() are stored once (PostgreSQL 11+) and pass | add the column nullable without a default (or with a constant one), give new rows their value with ALTER COLUMN ... SET DEFAULT, backfill the existing rows in batches |
 * | constraint-not-valid | ADD CONSTRAINT ... CHECK or FOREIGN KEY without NOT VALID; a CHECK or REFERENCES on a column added to an existing table | validating every row holds a lock that blocks writes (a foreign key locks the referenced table too) | add the constraint NOT VALID here and VALIDATE CONSTRAINT in a later migration |
 * | validate-same-file | VALIDATE CONSTRAINT in the file that added the constraint NOT VALID | the file is one transaction: the lock the ADD took is still held while VALIDATE scans, so NOT VALID gained nothing | VALIDATE CONSTRAINT in a later migration file |
 * | unique-not-using-index | ADD UNIQUE, PRIMARY KEY or EXCLUDE that builds its own index on an existing table; UNIQUE or PRIMARY KEY on a column added to one | the index is built under a lock that blocks writes | CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS in a migration file of its own, then ADD CONSTRAINT ... UNIQUE USING INDEX (or PRIMARY KEY USING INDEX) in a later one. An exclusion constraint has no such form: only a marker excuses it |
 * | drop-used | DROP TABLE or DROP COLUMN of a name that the previous release's src/ mentions | the previous release runs during the deploy and after a rollback: its queries would fail | stop using it in this release and drop it in the next one (expand, then contract) |
 * | rename-used | renaming a table or column that the previous release's src/ mentions | the same: the old name is gone while old code still asks for it | add the new name beside the old (a new column that the code writes along with the old one, backfilled), move the code, drop the old name in the next release |
 * | non-transactional-mix | any other statement in a file that holds CREATE INDEX CONCURRENTLY, DROP INDEX CONCURRENTLY or REINDEX ... CONCURRENTLY | such a file runs outside a transaction, statement by statement, and is retried from its first statement after a failure: anything else would run half, or twice | the concurrent index statements in a migration file of their own, everything else in another |
 * | concurrent-not-idempotent | CREATE INDEX CONCURRENTLY without IF NOT EXISTS, DROP INDEX CONCURRENTLY without IF EXISTS, and REINDEX ... CONCURRENTLY | the retry from the first statement would stop on what the failed attempt already did (a failed REINDEX CONCURRENTLY leaves _ccnew indexes behind; the runner refuses it too) | CREATE INDEX CONCURRENTLY IF NOT EXISTS, DROP INDEX CONCURRENTLY IF EXISTS |
 *
 * Besides these, a file the parser refuses is `sql-syntax`, and the markers that excuse a finding
 * (markers.ts) have rules of their own: `marker-without-reason`, `marker-unused`, `marker-unknown-rule`.
 */

/** Each rule's safe recipe: what to write instead, the end of every finding of the rule. */
export const RULES = {
  'index-not-concurrent': {
    recipe: 'build it with CREATE INDEX CONCURRENTLY IF NOT EXISTS in a migration file of its own (instead of a REINDEX: build a new index so, then DROP INDEX CONCURRENTLY IF EXISTS the old one)',
  },
  'column-type-change': {
    recipe:
      'add a column of the new type, have the code write both, backfill it in batches with a background migration, move the reads, and drop the old column in a later release' +
      ' (a change that rewrites nothing, such as varchar(n) to text, may be excused with a marker that says so)',
  },
  'set-not-null': {
    recipe:
      'fill the NULLs in batches with a background migration, then add a CHECK (col IS NOT NULL) NOT VALID, validate it in a later migration, then SET NOT NULL, which then uses the valid check instead of scanning' +
      ' (for a new column: add it nullable without a default first)',
  },
  'generated-stored-column': {
    recipe: 'add a plain nullable column that the code writes, backfill it in batches with a background migration; or compute the expression in the query and index it with CREATE INDEX CONCURRENTLY',
  },
  'volatile-default': {
    recipe:
      'add the column nullable without a default (or with a constant one), give new rows their value with ALTER COLUMN ... SET DEFAULT in the same migration, and backfill the existing rows in batches with a background migration',
  },
  'constraint-not-valid': {
    recipe: 'add the constraint NOT VALID here and VALIDATE CONSTRAINT in a later migration',
  },
  'validate-same-file': {
    recipe: 'move the VALIDATE CONSTRAINT to a later migration file',
  },
  'unique-not-using-index': {
    recipe: 'build the index with CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS in a migration file of its own, then ADD CONSTRAINT ... UNIQUE (or PRIMARY KEY) USING INDEX in a later migration',
  },
  'drop-used': {
    recipe: 'stop using it in this release and drop it in the next one (expand, then contract)',
  },
  'rename-used': {
    recipe:
      'add the new name beside the old one (a new column the code writes along with the old, backfilled in batches), move the code to it, and drop the old name in the next release (expand, then contract)',
  },
  'non-transactional-mix': {
    recipe: 'put the concurrent index statements in a migration file of their own and everything else in another',
  },
  'concurrent-not-idempotent': {
    recipe: 'write CREATE INDEX CONCURRENTLY IF NOT EXISTS, DROP INDEX CONCURRENTLY IF EXISTS (instead of REINDEX CONCURRENTLY: a new index built so, then the old one dropped so)',
  },
} as const satisfies Record<string, { recipe: string }>;

/** The ids a marker may name (`-- lint: allow <rule-id> because ...`). */
export type RuleId = keyof typeof RULES;

/** Findings about the markers themselves and about unreadable files: no marker excuses them. */
export const OTHER_RULES = ['sql-syntax', 'marker-without-reason', 'marker-unused', 'marker-unknown-rule'] as const;
export type OtherRuleId = (typeof OTHER_RULES)[number];

export const isRuleId = (id: string): id is RuleId => Object.hasOwn(RULES, id);

/** What one statement breaks, before markers are applied: the rule and what is wrong, in words. */
export interface Refusal {
  rule: RuleId;
  problem: string;
}

export const refuse = (rule: RuleId, problem: string): Refusal => ({ rule, problem });

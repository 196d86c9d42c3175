// How a migration file runs (docs/migrations.md). Most files run whole, in one transaction. A file
// that builds or drops an index CONCURRENTLY cannot: PostgreSQL refuses those statements inside a
// transaction block. Such a file runs statement by statement, and since a failure can leave it
// half done, it may hold nothing but those statements, each written to be run again
// (IF NOT EXISTS / IF EXISTS), so that the runner can start it over from the top. The same rules
// are checked by `make lint-migrations` before a file ships; here they are checked again because a
// file that breaks them would otherwise fail half way on a production database.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { MigrationFile } from './migration-files.ts';

/** A CREATE INDEX CONCURRENTLY or DROP INDEX CONCURRENTLY of a file that runs outside a transaction. */
export interface ConcurrentStatement {
  text: string;
  /** 1-based, in the file. */
  line: number;
  /**
   * The index a CREATE builds and its table (quoted, as to_regclass reads it): a failed earlier
   * build of it is left invalid and must be dropped first.
   */
  builds: { name: string; table: string } | null;
}

export type MigrationSteps = { kind: 'transaction' } | { kind: 'concurrent'; statements: ConcurrentStatement[] };

interface ParsedStatement {
  stmt: Record<string, Record<string, unknown>>;
  stmt_location?: number;
  stmt_len?: number;
}

// Only a file that mentions the word is parsed: the parser (libpg-query, PostgreSQL's own, as
// WebAssembly) runs in a child process (migration-parse.ts says why), a few hundred ms a file.
const mayBeConcurrent = /concurrently/i;
const parser = fileURLToPath(new URL('./migration-parse.ts', import.meta.url));

export async function migrationSteps(file: MigrationFile): Promise<MigrationSteps> {
  if (!mayBeConcurrent.test(file.contents)) return { kind: 'transaction' };
  const statements = (await parseSql(file)).stmts ?? [];
  // The parser's locations count bytes of UTF-8, not UTF-16 code units.
  const bytes = Buffer.from(file.contents);
  const located = statements.map((statement) => {
    const start = statement.stmt_location ?? 0;
    const end = statement.stmt_len ? start + statement.stmt_len : bytes.length;
    const raw = bytes.subarray(start, end).toString();
    const leading = raw.length - raw.trimStart().length;
    const line = bytes.subarray(0, start).toString().split('\n').length + raw.slice(0, leading).split('\n').length - 1;
    return { statement, text: raw.trim(), line };
  });
  const concurrent = located.filter(({ statement }) => isConcurrent(statement.stmt));
  if (concurrent.length === 0) return { kind: 'transaction' };

  const other = located.find(({ statement }) => !isConcurrent(statement.stmt));
  if (other) {
    throw new Error(
      `Migration ${file.fileName} mixes a statement that cannot run in a transaction (line ${concurrent[0]!.line}) with others (line ${other.line}): ` +
        'put each CREATE INDEX CONCURRENTLY or DROP INDEX CONCURRENTLY in a migration file of its own (docs/migrations.md).',
    );
  }
  return {
    kind: 'concurrent',
    statements: concurrent.map(({ statement, text, line }) => {
      const { IndexStmt: create, DropStmt: drop } = statement.stmt;
      if ((create && create.if_not_exists !== true) || (drop && drop.missing_ok !== true)) {
        throw new Error(
          `Migration ${file.fileName}, line ${line}: a statement run outside a transaction may be run again after a failure, so it must say ` +
            `${create ? 'CREATE INDEX CONCURRENTLY IF NOT EXISTS' : 'DROP INDEX CONCURRENTLY IF EXISTS'} (docs/migrations.md).`,
        );
      }
      return { text, line, builds: create ? builtIndex(create) : null };
    }),
  };
}

function parseSql(file: MigrationFile): Promise<{ stmts?: ParsedStatement[] }> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, ['--liftoff-only', parser], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`Migration ${file.fileName} does not parse: ${stderr.trim() || error.message}`, { cause: error }));
      else resolve(JSON.parse(stdout) as { stmts?: ParsedStatement[] });
    });
    child.stdin?.end(file.contents);
  });
}

function isConcurrent(stmt: ParsedStatement['stmt']): boolean {
  if (stmt.IndexStmt) return stmt.IndexStmt.concurrent === true;
  if (stmt.DropStmt) return stmt.DropStmt.concurrent === true;
  // REINDEX ... CONCURRENTLY leaves `_ccnew` indexes behind when it fails: not supported here.
  if (stmt.ReindexStmt && JSON.stringify(stmt.ReindexStmt).includes('"concurrently"')) {
    throw new Error('REINDEX CONCURRENTLY is not supported in migrations: build a new index CONCURRENTLY, then drop the old one (docs/migrations.md).');
  }
  return false;
}

function builtIndex(create: Record<string, unknown>): ConcurrentStatement['builds'] {
  const name = create.idxname;
  // An unnamed index gets a name PostgreSQL chooses, which a retry cannot find: the lint refuses it.
  if (typeof name !== 'string') return null;
  const relation = create.relation as { schemaname?: string; relname: string };
  const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;
  return { name, table: relation.schemaname ? `${quote(relation.schemaname)}.${quote(relation.relname)}` : quote(relation.relname) };
}

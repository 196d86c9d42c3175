/**
 * Dropping or renaming a table or column that the previous release still uses. While a release
 * deploys, instances of the previous one keep serving (and a rollback brings it back); every query
 * of theirs that names the old table or column fails from the moment the migration commits.
 * "Uses" is deliberately simple and strict: the name appears as a whole word anywhere in that
 * release's src/ (a column named like a common word is then always "used": excuse it with a marker
 * that says why the old code does not read it).
 */
import type { DropStmt, RenameStmt } from 'libpg-query';
import type { FileContext } from './file-context.ts';
import { refuse, type Refusal } from './rules.ts';
import { droppedTables } from './schema-history.ts';
import { tableName } from './sql-file.ts';

export function checkDrop(statement: DropStmt, context: FileContext): Refusal[] {
  return droppedTables({ DropStmt: statement })
    .filter((table) => context.existing(table))
    .flatMap((table) => checkRemoval('drop-used', `drops the table ${context.describe(table)}`, lastPart(table), context));
}

export function checkRename(statement: RenameStmt, context: FileContext): Refusal[] {
  const table = tableName(statement.relation);
  if (!context.existing(table)) return [];
  if (statement.renameType === 'OBJECT_TABLE') return checkRemoval('rename-used', `renames the table ${context.describe(table)} to ${statement.newname}`, lastPart(table), context);
  if (statement.renameType === 'OBJECT_COLUMN' && statement.relationType === 'OBJECT_TABLE' && statement.subname) {
    return checkRemoval('rename-used', `renames the column ${statement.subname} of ${context.describe(table)} to ${statement.newname}`, statement.subname, context);
  }
  return [];
}

/** DROP COLUMN (one command of an ALTER TABLE on an existing table). */
export function checkDropColumn(table: string, column: string, context: FileContext): Refusal[] {
  return checkRemoval('drop-used', `drops the column ${column} of ${context.describe(table)}`, column, context);
}

function checkRemoval(rule: 'drop-used' | 'rename-used', what: string, name: string, context: FileContext): Refusal[] {
  const files = context.source.filesUsing(name);
  const commit = context.source.commit.slice(0, 12);
  if (files === undefined) {
    return [
      refuse(
        rule,
        `${what}, and the previous release's source (commit ${commit}, releases/previous.json) could not be read with git (a shallow clone?), so "${name}" is taken as still used by it` +
          ' (fetch that commit to check)',
      ),
    ];
  }
  if (files.length === 0) return [];
  const shown = files.slice(0, 3).join(', ') + (files.length > 3 ? ` and ${files.length - 3} more` : '');
  return [refuse(rule, `${what}, which the previous release (commit ${commit}) still uses: "${name}" appears in ${shown}; its instances keep running during the deploy and their queries would fail`)];
}

const lastPart = (table: string): string => table.slice(table.lastIndexOf('.') + 1);

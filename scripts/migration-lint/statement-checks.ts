/**
 * The checks of one statement of a judged migration, by kind. Statements of other kinds (CREATE
 * TABLE, UPDATE, CREATE FUNCTION, ...) pass: a new table holds no rows, and a backfill's cost is the
 * backfill's business (docs/migrations.md says to run it in batches, outside the migration).
 */
import type { IndexStmt, Node, ReindexStmt } from 'libpg-query';
import { checkAlterTable } from './alter-table.ts';
import type { FileContext } from './file-context.ts';
import { checkOutsideTransaction, isConcurrentReindex } from './non-transactional.ts';
import { checkDrop, checkRename } from './removals.ts';
import { refuse, type Refusal } from './rules.ts';
import { tableName } from './sql-file.ts';

/** `outsideTransaction`: the file holds a concurrent index statement (non-transactional.ts). */
export function checkStatement(node: Node, context: FileContext, outsideTransaction: boolean): Refusal[] {
  const refusals = outsideTransaction ? checkOutsideTransaction(node) : [];
  if ('IndexStmt' in node) refusals.push(...checkIndex(node.IndexStmt, context));
  if ('ReindexStmt' in node && !isConcurrentReindex(node)) refusals.push(...checkReindex(node.ReindexStmt));
  if ('AlterTableStmt' in node) refusals.push(...checkAlterTable(node.AlterTableStmt, context));
  if ('DropStmt' in node) refusals.push(...checkDrop(node.DropStmt, context));
  if ('RenameStmt' in node) refusals.push(...checkRename(node.RenameStmt, context));
  return refusals;
}

function checkIndex(statement: IndexStmt, context: FileContext): Refusal[] {
  const table = tableName(statement.relation);
  if (statement.concurrent || !context.existing(table)) return [];
  const index = statement.idxname ? `the index ${statement.idxname}` : 'an index';
  return [refuse('index-not-concurrent', `builds ${index} on ${context.describe(table)} without CONCURRENTLY: its lock blocks every write to the table until the build ends`)];
}

function checkReindex(statement: ReindexStmt): Refusal[] {
  const target = statement.relation ? tableName(statement.relation) : (statement.name ?? '');
  return [refuse('index-not-concurrent', `rebuilds ${target} without CONCURRENTLY: writes to the table, and reads that use the index, wait until it ends`)];
}

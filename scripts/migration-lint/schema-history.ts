/**
 * What the migrations read so far have left behind, statement by statement (frozen ones included):
 *
 * - the tables, each with the file that created it. The lock rules apply to tables that hold rows
 *   when a migration runs: those an earlier file created. A table the same file creates is empty
 *   while the file runs (one transaction), so building its indexes or constraints blocks nobody.
 * - the CHECK (col IS NOT NULL) constraints and whether each is valid yet: with a valid one,
 *   PostgreSQL 12+ does SET NOT NULL without scanning the table, which is the set-not-null recipe.
 */
import type { AlterTableCmd, Node } from 'libpg-query';
import { listItems, qualifiedName, tableName, type Statement } from './sql-file.ts';

export interface SchemaHistory {
  /** Table → the migration file that created it. */
  tables: Map<string, string>;
  /** `table.constraint` → the column a CHECK (col IS NOT NULL) covers, and whether it is valid. */
  notNullChecks: Map<string, { table: string; column: string; valid: boolean }>;
}

export const emptyHistory = (): SchemaHistory => ({ tables: new Map(), notNullChecks: new Map() });

/** Records what one statement of `fileName` creates, drops, renames or validates. */
export function applyStatement(history: SchemaHistory, fileName: string, node: Node): void {
  const { tables, notNullChecks } = history;
  const created = createdTable(node);
  if (created && !(created.ifNotExists && tables.has(created.name))) tables.set(created.name, fileName);
  for (const dropped of droppedTables(node)) {
    tables.delete(dropped);
    forgetChecks(history, (check) => check.table === dropped);
  }
  if ('RenameStmt' in node && node.RenameStmt.newname) {
    const { renameType, subname, newname } = node.RenameStmt;
    const table = tableName(node.RenameStmt.relation);
    if (renameType === 'OBJECT_TABLE') {
      const creator = tables.get(table);
      tables.delete(table);
      if (creator !== undefined) tables.set(newname, creator);
      for (const [key, check] of notNullChecks) if (check.table === table) notNullChecks.set(key, { ...check, table: newname });
    }
    if (renameType === 'OBJECT_COLUMN') {
      for (const [key, check] of notNullChecks) if (check.table === table && check.column === subname) notNullChecks.set(key, { ...check, column: newname });
    }
  }
  if ('AlterTableStmt' in node && node.AlterTableStmt.objtype === 'OBJECT_TABLE') {
    const table = tableName(node.AlterTableStmt.relation);
    for (const command of node.AlterTableStmt.cmds ?? []) if ('AlterTableCmd' in command) applyCommand(history, table, command.AlterTableCmd);
  }
}

function applyCommand(history: SchemaHistory, table: string, command: AlterTableCmd): void {
  const key = `${table}.${command.name ?? ''}`;
  const existing = history.notNullChecks.get(key);
  if (command.subtype === 'AT_AddConstraint' && command.def && 'Constraint' in command.def) {
    const { contype, conname, raw_expr, skip_validation } = command.def.Constraint;
    const column = raw_expr && 'NullTest' in raw_expr && raw_expr.NullTest.nulltesttype === 'IS_NOT_NULL' ? columnOf(raw_expr.NullTest.arg) : undefined;
    if (contype === 'CONSTR_CHECK' && conname && column) history.notNullChecks.set(`${table}.${conname}`, { table, column, valid: skip_validation !== true });
  }
  if (command.subtype === 'AT_ValidateConstraint' && existing) history.notNullChecks.set(key, { ...existing, valid: true });
  if (command.subtype === 'AT_DropConstraint') history.notNullChecks.delete(key);
  if (command.subtype === 'AT_DropColumn') forgetChecks(history, (check) => check.table === table && check.column === command.name);
}

/** Whether a valid CHECK (column IS NOT NULL) lets SET NOT NULL skip its scan. */
export const provenNotNull = (history: SchemaHistory, table: string, column: string): boolean =>
  [...history.notNullChecks.values()].some((check) => check.table === table && check.column === column && check.valid);

/**
 * The tables a file creates itself, given the history before it, so the lock rules spare them.
 * `create table if not exists` of a table an earlier file made creates nothing: that one holds rows.
 */
export function tablesCreatedIn(before: SchemaHistory, statements: Statement[]): Set<string> {
  const created = new Set<string>();
  for (const { node } of statements) {
    const table = createdTable(node);
    if (table && !(table.ifNotExists && before.tables.has(table.name))) created.add(table.name);
  }
  return created;
}

/** How a finding names an existing table: with the file that created it, when one did. */
export function describeTable(history: SchemaHistory, table: string): string {
  const creator = history.tables.get(table);
  return creator ? `${table} (created by ${creator})` : `${table} (created by no earlier migration here, so taken as existing)`;
}

export function droppedTables(node: Node): string[] {
  if (!('DropStmt' in node) || node.DropStmt.removeType !== 'OBJECT_TABLE') return [];
  return (node.DropStmt.objects ?? []).map((object) => qualifiedName(listItems(object)));
}

function createdTable(node: Node): { name: string; ifNotExists: boolean } | undefined {
  if ('CreateStmt' in node) return { name: tableName(node.CreateStmt.relation), ifNotExists: node.CreateStmt.if_not_exists === true };
  // create table ... as, and materialized views: tables with rows of their own.
  if ('CreateTableAsStmt' in node) return { name: tableName(node.CreateTableAsStmt.into?.rel), ifNotExists: node.CreateTableAsStmt.if_not_exists === true };
  return undefined;
}

function columnOf(node: Node | undefined): string | undefined {
  const fields = node && 'ColumnRef' in node ? (node.ColumnRef.fields ?? []) : [];
  const only = fields.length === 1 ? fields[0] : undefined;
  return only && 'String' in only ? only.String.sval : undefined;
}

function forgetChecks(history: SchemaHistory, matches: (check: { table: string; column: string }) => boolean): void {
  for (const [key, check] of history.notNullChecks) if (matches(check)) history.notNullChecks.delete(key);
}

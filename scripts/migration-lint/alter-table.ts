/**
 * ALTER TABLE on an existing table, command by command (one statement may hold several, as 0013
 * and 0014 do). The commands refused here take a lock that stops traffic for as long as the table
 * is big: a rewrite or a full scan under ACCESS EXCLUSIVE, or a validation or index build that
 * blocks writes. The rest (a nullable column, SET DEFAULT, DROP CONSTRAINT, ...) is a catalog change.
 */
import type { AlterTableCmd, AlterTableStmt, Constraint } from 'libpg-query';
import { checkAddedColumn } from './add-column.ts';
import { REWRITE_LOCK, type FileContext } from './file-context.ts';
import { checkDropColumn } from './removals.ts';
import { refuse, type Refusal } from './rules.ts';
import { tableName } from './sql-file.ts';

const SCAN_LOCK = 'scans every row under an ACCESS EXCLUSIVE lock: every read and write of the table waits until that ends';

export function checkAlterTable(statement: AlterTableStmt, context: FileContext): Refusal[] {
  if (statement.objtype !== 'OBJECT_TABLE') return [];
  const table = tableName(statement.relation);
  if (!context.existing(table)) return [];
  return (statement.cmds ?? []).flatMap((node) => ('AlterTableCmd' in node ? checkCommand(node.AlterTableCmd, table, context) : []));
}

function checkCommand(command: AlterTableCmd, table: string, context: FileContext): Refusal[] {
  const shown = context.describe(table);
  const column = command.name ?? '';
  switch (command.subtype) {
    case 'AT_AddColumn':
      return command.def && 'ColumnDef' in command.def ? checkAddedColumn(command.def.ColumnDef, shown) : [];
    case 'AT_AlterColumnType':
      return [refuse('column-type-change', `changes the type of ${column} of ${shown}: it ${REWRITE_LOCK}, and the previous release may not read the new type`)];
    case 'AT_SetNotNull':
      if (context.provenNotNull(table, column)) return [];
      return [refuse('set-not-null', `sets ${column} of ${shown} NOT NULL, which ${SCAN_LOCK}`)];
    case 'AT_SetExpression':
      return [refuse('generated-stored-column', `changes the expression of the generated column ${column} of ${shown}: it ${REWRITE_LOCK}`)];
    case 'AT_DropColumn':
      return checkDropColumn(table, column, context);
    case 'AT_AddConstraint':
      return command.def && 'Constraint' in command.def ? checkAddedConstraint(command.def.Constraint, table, context) : [];
    case 'AT_ValidateConstraint':
      if (!context.notValidHere.has(`${table}.${column}`)) return [];
      return [refuse('validate-same-file', `validates ${column} of ${shown} in the file that added it NOT VALID: the file is one transaction, so the lock the ADD took is still held while this scans`)];
    default:
      return [];
  }
}

function checkAddedConstraint(constraint: Constraint, table: string, context: FileContext): Refusal[] {
  const name = constraint.conname ? `the constraint ${constraint.conname}` : 'a constraint';
  const shown = context.describe(table);
  switch (constraint.contype) {
    case 'CONSTR_CHECK':
    case 'CONSTR_FOREIGN': {
      if (constraint.skip_validation) {
        if (constraint.conname) context.notValidHere.add(`${table}.${constraint.conname}`);
        return [];
      }
      const kind = constraint.contype === 'CONSTR_CHECK' ? 'CHECK' : 'FOREIGN KEY';
      const referenced = constraint.contype === 'CONSTR_FOREIGN' ? `, and locks ${tableName(constraint.pktable)} too` : '';
      return [refuse('constraint-not-valid', `adds ${name} (${kind}) to ${shown} without NOT VALID: it validates every row while writes wait${referenced}`)];
    }
    case 'CONSTR_NOTNULL':
      // PostgreSQL 18's `add constraint ... not null col` scans as SET NOT NULL does, unless NOT VALID.
      return constraint.skip_validation ? [] : [refuse('set-not-null', `adds ${name} (NOT NULL) to ${shown}, which ${SCAN_LOCK}`)];
    case 'CONSTR_PRIMARY':
    case 'CONSTR_UNIQUE':
      if (constraint.indexname) return []; // USING INDEX: the index was built (concurrently) before.
      return [refuse('unique-not-using-index', `adds ${name} (${constraint.contype === 'CONSTR_PRIMARY' ? 'PRIMARY KEY' : 'UNIQUE'}) to ${shown}, building its index while writes wait`)];
    case 'CONSTR_EXCLUSION':
      return [refuse('unique-not-using-index', `adds ${name} (EXCLUDE) to ${shown}, building its index while writes wait; an exclusion constraint has no USING INDEX form, so only a marker can excuse it`)];
    default:
      return [];
  }
}

/**
 * ADD COLUMN on an existing table. A nullable column, or one with a constant or stable default,
 * is a catalog change (PostgreSQL 11+): instant. What makes PostgreSQL touch every row is a value
 * computed per row (a stored generated column, a volatile default, serial, identity) or a
 * constraint declared with the column, which is checked (or indexed) at once and cannot be NOT VALID.
 */
import type { ColumnDef, Constraint } from 'libpg-query';
import { REWRITE_LOCK } from './file-context.ts';
import { refuse, type Refusal } from './rules.ts';
import { volatility } from './volatility.ts';

const SERIAL_TYPES = new Set(['smallserial', 'serial', 'bigserial', 'serial2', 'serial4', 'serial8']);

/** `table` as the finding names it (with the migration that created it). */
export function checkAddedColumn(column: ColumnDef, table: string): Refusal[] {
  const name = column.colname ?? '';
  const adds = `adds the column ${name} to ${table}`;
  const refusals: Refusal[] = [];
  const type = (column.typeName?.names ?? []).map((part) => ('String' in part ? part.String.sval : '')).at(-1) ?? '';
  if (SERIAL_TYPES.has(type)) refusals.push(refuse('volatile-default', `${adds} as ${type}, whose default nextval() is computed for every existing row: it ${REWRITE_LOCK}`));
  for (const node of column.constraints ?? []) {
    if ('Constraint' in node) refusals.push(...checkColumnConstraint(node.Constraint, adds));
  }
  return refusals;
}

function checkColumnConstraint(constraint: Constraint, adds: string): Refusal[] {
  switch (constraint.contype) {
    case 'CONSTR_GENERATED':
      // PostgreSQL 18's virtual generated columns ('v') are computed when read: nothing is rewritten.
      if (constraint.generated_kind === 'v') return [];
      return [refuse('generated-stored-column', `${adds} as a stored generated column: computing it for every existing row ${REWRITE_LOCK}`)];
    case 'CONSTR_IDENTITY':
      return [refuse('volatile-default', `${adds} as an identity column, numbered for every existing row: it ${REWRITE_LOCK}`)];
    case 'CONSTR_DEFAULT': {
      const volatile = constraint.raw_expr ? volatility(constraint.raw_expr) : undefined;
      return volatile ? [refuse('volatile-default', `${adds} with a volatile default (${volatile}), computed for every existing row: it ${REWRITE_LOCK}`)] : [];
    }
    case 'CONSTR_CHECK':
    case 'CONSTR_FOREIGN':
      return [
        refuse(
          'constraint-not-valid',
          `${adds} with a ${constraint.contype === 'CONSTR_CHECK' ? 'CHECK' : 'REFERENCES'} constraint, validated at once over every row while writes wait (a column's own constraint cannot be NOT VALID; add the column first, then the constraint)`,
        ),
      ];
    case 'CONSTR_PRIMARY':
    case 'CONSTR_UNIQUE':
      return [refuse('unique-not-using-index', `${adds} as ${constraint.contype === 'CONSTR_PRIMARY' ? 'PRIMARY KEY' : 'UNIQUE'}, whose index is built at once while writes wait`)];
    default:
      return [];
  }
}

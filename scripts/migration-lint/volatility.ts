/**
 * Whether a column default is volatile. Since PostgreSQL 11, ADD COLUMN with a default that is not
 * volatile evaluates it once and stores the value in the catalog: no rewrite. A volatile default
 * (gen_random_uuid(), random(), clock_timestamp(), nextval()) is evaluated for every row, which
 * rewrites the table under ACCESS EXCLUSIVE. The parser knows names, not volatility, so anything
 * not known to be safe counts as volatile: constants, casts of them, operators on them, the SQL
 * value functions (current_timestamp, current_user: stable) and a short list of stable or
 * immutable functions pass; any other function call, or any other expression, is refused.
 */
import type { Node } from 'libpg-query';

// Stable or immutable in pg_proc (provolatile 's' or 'i'); each evaluated once by ADD COLUMN.
const STABLE_FUNCTIONS = new Set([
  'now',
  'transaction_timestamp',
  'statement_timestamp',
  'make_interval',
  'make_date',
  'make_timestamp',
  'make_timestamptz',
  'to_timestamp',
  'lower',
  'upper',
  'btrim',
  'length',
  'jsonb_build_object',
  'jsonb_build_array',
  'to_jsonb',
]);

/** Undefined when the default is a constant or stable; otherwise what makes it volatile, in words. */
export function volatility(expression: Node): string | undefined {
  if ('A_Const' in expression || 'SQLValueFunction' in expression) return undefined;
  if ('TypeCast' in expression) return optional(expression.TypeCast.arg);
  if ('FuncCall' in expression) {
    const names = (expression.FuncCall.funcname ?? []).map((part) => ('String' in part ? part.String.sval : ''));
    const name = names.at(-1) ?? '';
    const schema = names.length > 1 ? names[0] : 'pg_catalog';
    if (schema !== 'pg_catalog' || !STABLE_FUNCTIONS.has(name)) return `${names.join('.')}() is not on the short list of functions known to be stable, so it is taken as volatile`;
    return first(expression.FuncCall.args);
  }
  if ('A_Expr' in expression) return optional(expression.A_Expr.lexpr) ?? optional(expression.A_Expr.rexpr);
  if ('BoolExpr' in expression) return first(expression.BoolExpr.args);
  if ('CoalesceExpr' in expression) return first(expression.CoalesceExpr.args);
  if ('MinMaxExpr' in expression) return first(expression.MinMaxExpr.args);
  if ('A_ArrayExpr' in expression) return first(expression.A_ArrayExpr.elements);
  if ('RowExpr' in expression) return first(expression.RowExpr.args);
  if ('NullTest' in expression) return optional(expression.NullTest.arg);
  if ('CollateClause' in expression) return optional(expression.CollateClause.arg);
  if ('CaseExpr' in expression) {
    const { arg, args, defresult } = expression.CaseExpr;
    const whens = (args ?? []).flatMap((when) => ('CaseWhen' in when ? [when.CaseWhen.expr, when.CaseWhen.result] : [when]));
    return optional(arg) ?? first(whens) ?? optional(defresult);
  }
  return `the expression (${Object.keys(expression)[0]}) is not one known to be stable, so it is taken as volatile`;
}

const optional = (node: Node | undefined): string | undefined => (node ? volatility(node) : undefined);

function first(nodes: (Node | undefined)[] | undefined): string | undefined {
  for (const node of nodes ?? []) {
    const found = optional(node);
    if (found) return found;
  }
  return undefined;
}

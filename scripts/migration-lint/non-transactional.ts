/**
 * Files that cannot run in a transaction. CREATE INDEX CONCURRENTLY, DROP INDEX CONCURRENTLY and
 * REINDEX ... CONCURRENTLY refuse to run inside one, so the runner (src/db/migrations.ts) runs a
 * file holding one outside a transaction, statement by statement; after a failure (a deadlock, a
 * lock timeout, a deploy cut short) it runs the file again from its first statement. Such a file
 * is safe only when every statement is one of those and can run twice: IF NOT EXISTS, IF EXISTS.
 * Anything else in it would be applied half, or twice. REINDEX CONCURRENTLY has no such form (a
 * failed one leaves `_ccnew` indexes behind), so it is refused in any file, as the runner does.
 */
import type { Node } from 'libpg-query';
import { refuse, type Refusal } from './rules.ts';

export function runsOutsideTransaction(node: Node): boolean {
  if ('IndexStmt' in node) return node.IndexStmt.concurrent === true;
  if ('DropStmt' in node) return node.DropStmt.removeType === 'OBJECT_INDEX' && node.DropStmt.concurrent === true;
  if ('ReindexStmt' in node) return isConcurrentReindex(node);
  return false;
}

/** REINDEX's options are a list (`reindex (concurrently) ...` or `reindex ... concurrently`). */
export function isConcurrentReindex(node: Node): boolean {
  if (!('ReindexStmt' in node)) return false;
  return (node.ReindexStmt.params ?? []).some((param) => 'DefElem' in param && param.DefElem.defname === 'concurrently');
}

/** The refusals of one statement of a file that runs outside a transaction. */
export function checkOutsideTransaction(node: Node): Refusal[] {
  if (!runsOutsideTransaction(node)) {
    return [
      refuse(
        'non-transactional-mix',
        'shares its file with a concurrent index statement, so it runs outside a transaction and runs again when the file is retried from its first statement after a failure',
      ),
    ];
  }
  if ('IndexStmt' in node && !node.IndexStmt.if_not_exists) {
    return [refuse('concurrent-not-idempotent', 'lacks IF NOT EXISTS: the retry of this file after a failure would stop here on the index the first attempt built')];
  }
  if (isConcurrentReindex(node)) {
    // The runner refuses it too (src/db/migration-steps.ts).
    return [refuse('concurrent-not-idempotent', 'cannot be retried cleanly: a REINDEX CONCURRENTLY that fails leaves invalid `_ccnew` indexes behind')];
  }
  if ('DropStmt' in node && !node.DropStmt.missing_ok) {
    return [refuse('concurrent-not-idempotent', 'lacks IF EXISTS: the retry of this file after a failure would stop here on the index the first attempt dropped')];
  }
  return [];
}

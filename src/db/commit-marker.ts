/**
 * A statement that each transaction of a piece of work runs last, on its own connection, just
 * before its COMMIT: whatever it writes commits exactly when the work does. Its use is a COMMIT
 * whose answer never came (its deadline passed, its connection dropped): the work may or may not
 * be in the database, and reading the marker back, once the transaction has ended, tells which.
 * The idempotent calls (idempotency/idempotent-call.ts) mark their key this way, so a retry never
 * does twice what committed once.
 *
 * A scope (AsyncLocalStorage) like the deadlines' (deadline.ts): the work's store functions open
 * their transactions without knowing that a caller above wants them marked. transaction-guard.ts
 * runs the marker in every top-level, writable transaction begun in the scope.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type postgres from 'postgres';

export interface CommitMarker {
  /** Writes the marker on `tx`, after the callback succeeded and before the COMMIT; a rejection rolls the transaction back. */
  write(tx: postgres.TransactionSql): Promise<unknown>;
}

const scope = new AsyncLocalStorage<CommitMarker>();

/** Runs `fn` with `marker` written in each transaction it commits. */
export function withCommitMarker<T>(marker: CommitMarker, fn: () => T): T {
  return scope.run(marker, fn);
}

/** The marker of the scope the caller runs in, if any. */
export function currentCommitMarker(): CommitMarker | undefined {
  return scope.getStore();
}

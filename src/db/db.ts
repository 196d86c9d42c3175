/**
 * The pool or a transaction. Store functions take the one they run in: inside
 * `sql.begin(async (tx) => ...)` that is `tx`, never the pool (architecture.md, Database).
 */
import type { TransactionSql } from 'postgres';
import type { Sql } from './connection.ts';

export type Db = Sql | TransactionSql;

/**
 * pg-boss statements through one of our postgres.js clients: the caller's transaction (enqueueing
 * with the job row) or, on the embedded database, the single-connection client itself. pg-boss
 * sends parameterised single statements and, without parameters, multi-statement blocks (its
 * schema, migrations, and BEGIN ... COMMIT blocks); postgres.js runs a query without parameters
 * over the simple protocol, where several statements are allowed, and answers one result per
 * statement, which are flattened into one row set here.
 */
import type { Db as BossDb } from 'pg-boss';
import type { Db } from '../db/db.ts';

export function bossDb(sql: Db): BossDb {
  return {
    async executeSql(text, values) {
      const result: unknown[] = values?.length ? await sql.unsafe(text, values as never[]) : await sql.unsafe(text);
      // Several statements answer one result (itself an array) each; rows are objects.
      const rows = result.length > 0 && result.every(Array.isArray) ? result.flat() : [...result];
      return { rows };
    },
  };
}

/**
 * pg-boss statements through one of our postgres.js clients: the caller's transaction (enqueueing
 * with the job row) or, on the embedded database, the single-connection client itself. pg-boss
 * sends parameterised single statements and, without parameters, multi-statement blocks (its
 * schema, migrations, and BEGIN ... COMMIT blocks); postgres.js runs a query without parameters
 * over the simple protocol, where several statements are allowed, and answers one result per
 * statement, which are flattened into one row set here.
 *
 * Parameters: pg-boss is written for node-postgres, which sends a string as it is, whatever the
 * parameter's type. postgres.js serializes by the type the server infers, and for json and jsonb
 * that is JSON.stringify: JSON text pg-boss encoded itself and casts in SQL (`$1::json`, as when
 * a schedule fires and records its job: `json_to_recordset($1::json)`) would arrive as a JSON
 * string scalar. Such a string is sent typed as text, so the server casts the very text pg-boss
 * made, as it does for pg-boss's own `$1::text::json`.
 */
import type { Db as BossDb } from 'pg-boss';
import type { Db } from '../db/db.ts';

const TEXT_OID = 25;
/** A parameter cast straight to json or jsonb: `$2::jsonb`, not `$2::text::json` nor `$2::jsonb[]`. */
const JSON_CAST = /\$(\d+)::jsonb?(?![\w[])/g;

export function bossDb(sql: Db): BossDb {
  return {
    async executeSql(text, values) {
      const result: unknown[] = values?.length ? await sql.unsafe(text, parameters(sql, text, values) as never[]) : await sql.unsafe(text).catch(rollingBack(sql, text));
      // Several statements answer one result (itself an array) each; rows are objects.
      const rows = result.length > 0 && result.every(Array.isArray) ? result.flat() : [...result];
      return { rows };
    },
  };
}

/**
 * A failed `BEGIN; ...; COMMIT` block leaves its session inside the aborted transaction (the
 * server runs the block's statements one by one and stops at the error, before the COMMIT). On
 * the embedded database that session is the one every request shares, so it is rolled back here.
 */
function rollingBack(sql: Db, text: string) {
  return async (error: unknown): Promise<never> => {
    if (/^\s*begin\b/i.test(text)) await sql.unsafe('rollback').catch(() => undefined);
    throw error;
  };
}

/** `values`, with the strings the statement casts to json or jsonb sent as text (see above). */
function parameters(sql: Db, text: string, values: unknown[]): unknown[] {
  const jsonText = new Set([...text.matchAll(JSON_CAST)].map((match) => Number(match[1]) - 1));
  if (jsonText.size === 0) return values;
  return values.map((value, index) => (typeof value === 'string' && jsonText.has(index) ? sql.typed(value, TEXT_OID) : value));
}

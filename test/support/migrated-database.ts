/**
 * A new database on a PostgreSQL server, migrated and with pg-boss's schema: the template of a
 * `make test-pg` run (test/global-setup.ts) and each fault test's private server
 * (test/faults/support.ts). Nothing stays connected to it; a failure ends the connection and throws.
 */
import postgres from 'postgres';
import { migrate } from '../../src/db/migrations.ts';
import { installQueueSchema } from '../../src/jobs/queue.ts';

export const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Creates `name` on the server at `url` and migrates it; answers its URL. */
export async function createMigratedDatabase(url: string, name: string): Promise<string> {
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${quoteIdentifier(name)}`);
  } finally {
    await admin.end();
  }
  const target = new URL(url);
  target.pathname = `/${name}`;
  const sql = postgres(target.toString(), { max: 1, onnotice: () => {} });
  try {
    await migrate(sql);
    await installQueueSchema(sql);
  } finally {
    await sql.end();
  }
  return target.toString();
}

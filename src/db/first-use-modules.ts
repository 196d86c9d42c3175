/**
 * PostgreSQL loads some of its code at its first use in a session: pgvector's module when a
 * vector is first read or written, the Snowball stemmers (dict_snowball) when a text is first
 * indexed or a query analysed. On the embedded database that is a WebAssembly module to compile,
 * 50-60 ms on its one thread (measured on a restarted data directory: `english` 52 ms, pgvector
 * 9 ms), which the first index job or search after a start, and every request queued behind it,
 * would wait for (docs/benchmarks.md, API latency while indexing). `serve` loads them once it is
 * listening and its job queue has started (composition/commands.ts), no later than its worker
 * begins to take jobs.
 */
import type { Sql } from './connection.ts';

export async function loadFirstUseModules(sql: Sql): Promise<void> {
  await sql`select '[1]'::vector <=> '[1]'::vector, to_tsvector('english', 'loaded')`;
}

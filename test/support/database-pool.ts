/**
 * Embedded test databases kept open across the test files one worker process runs (vitest's
 * workers run file after file: vitest.config.ts). Opening one costs about 0.72 s of CPU (wasm
 * instantiation and PGlite's start), a couple of hundred times per run; resetting an open one to
 * the migrated template's content costs a few tens of milliseconds. A database goes back to the
 * pool only when the reset provably restored the template: same schema, same settings, every table
 * truncated and the migrations' rows put back; anything else (a failed statement, a dead thread, a
 * changed catalog) closes it instead.
 */
import { rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { connectionParameters, defaultDatabaseSettings, type Database, type Sql } from '../../src/db/connection.ts';

/** What the pool needs of a database: the client and the data directory to delete with it. */
export interface PoolableDatabase {
  db: Database;
  dataDir: string;
}

/** The template's content, read from a database that was just opened on a copy of it. */
interface TemplateSnapshot {
  /** Every table of the service's schemas, quoted, for TRUNCATE. */
  tables: string[];
  /** Rows of the tables migrations seed: table, insertable columns, rows as JSON. */
  seeded: { table: string; columns: string[]; rows: string }[];
  /** Every sequence of those schemas and its state. */
  sequences: { sequence: string; lastValue: string; isCalled: boolean }[];
  /** Digest of the schemas' relations, columns, types, functions and triggers: a file that changed them does not get reused. */
  schemaDigest: string;
  /** Digest of every setting once the connection's own were set: catches ALTER SYSTEM + reload, and settings a reset missed. */
  settingsDigest: string;
}

// The service's schemas: whatever the migrations and pg-boss created, found in the catalog.
const schemasPredicate = `n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_toast%' and n.nspname not like 'pg\\_temp%'`;
// Objects an extension owns (pgvector's) belong to it, not to the template's data.
const notExtensionMember = (classOid: string) => `not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = ${classOid} and d.deptype = 'e')`;

async function tablesOf(sql: Sql): Promise<string[]> {
  const rows = await sql.unsafe<{ name: string }[]>(
    `select format('%I.%I', n.nspname, c.relname) as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind in ('r', 'p') and ${schemasPredicate} and ${notExtensionMember('c.oid')} order by 1`,
  );
  return rows.map((row) => row.name);
}

async function sequencesOf(sql: Sql): Promise<TemplateSnapshot['sequences']> {
  const names = await sql.unsafe<{ name: string }[]>(
    `select format('%I.%I', n.nspname, c.relname) as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind = 'S' and ${schemasPredicate} and ${notExtensionMember('c.oid')} order by 1`,
  );
  const sequences: TemplateSnapshot['sequences'] = [];
  for (const { name } of names) {
    const [state] = await sql.unsafe<{ last_value: string; is_called: boolean }[]>(`select last_value::text, is_called from ${name}`);
    sequences.push({ sequence: name, lastValue: state!.last_value, isCalled: state!.is_called });
  }
  return sequences;
}

async function schemaDigestOf(sql: Sql): Promise<string> {
  const [row] = await sql.unsafe<{ digest: string }[]>(
    `select md5(coalesce(string_agg(item, E'\\n' order by item), '')) as digest from (
       select format('%s.%s %s %s:%s %s %s', n.nspname, c.relname, c.relkind, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull) as item
         from pg_class c join pg_namespace n on n.oid = c.relnamespace left join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
         where ${schemasPredicate}
       union all select format('%s.%s %s', n.nspname, p.proname, md5(p.prosrc)) from pg_proc p join pg_namespace n on n.oid = p.pronamespace where ${schemasPredicate}
       union all select format('%s %s %s', t.tgrelid::regclass, t.tgname, t.tgenabled) from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace where ${schemasPredicate}
       union all select format('%s %s', conrelid::regclass, conname) from pg_constraint k join pg_namespace n on n.oid = k.connamespace where ${schemasPredicate}
       union all select 'schema ' || nspname from pg_namespace n where ${schemasPredicate}
     ) items`,
  );
  return row!.digest;
}

async function settingsDigestOf(sql: Sql): Promise<string> {
  // Not extensions' settings (pgvector's hnsw.*, ivfflat.*): they are listed only once the
  // session has loaded the extension's library, which a test may or may not have made it do.
  const [row] = await sql.unsafe<{ digest: string }[]>(`select md5(string_agg(name || '=' || coalesce(setting, ''), E'\\n' order by name)) as digest from pg_settings where name not like '%.%'`);
  return row!.digest;
}

async function snapshotOf(sql: Sql): Promise<TemplateSnapshot> {
  const tables = await tablesOf(sql);
  const seeded: TemplateSnapshot['seeded'] = [];
  for (const table of tables) {
    const [row] = await sql.unsafe<{ rows: string | null }[]>(`select json_agg(t)::text as rows from ${table} t`);
    if (!row!.rows) continue;
    // Generated columns take no value; identity columns take one with OVERRIDING SYSTEM VALUE.
    const columns = await sql.unsafe<{ name: string }[]>(
      `select quote_ident(attname) as name from pg_attribute where attrelid = $1::regclass and attnum > 0 and not attisdropped and attgenerated = '' order by attnum`,
      [table],
    );
    seeded.push({ table, columns: columns.map((column) => column.name), rows: row!.rows });
  }
  return { tables, seeded, sequences: await sequencesOf(sql), schemaDigest: await schemaDigestOf(sql), settingsDigest: await settingsDigestOf(sql) };
}

/**
 * Clears what a test file could leave on PGlite's single backend. It serves one session, which
 * outlives the client's reconnects (embedded.ts), so a reconnect clears nothing. Not DISCARD ALL:
 * it would also deallocate the statements postgres.js prepared and keeps using on this client.
 */
async function resetSession(sql: Sql): Promise<void> {
  await sql.unsafe('select pg_advisory_unlock_all()');
  await sql.unsafe('unlisten *');
  await sql.unsafe('close all');
  await sql.unsafe('discard temp');
  await sql.unsafe('discard sequences');
  await sql.unsafe('discard plans');
  for (const { name } of await sql.unsafe<{ name: string }[]>('select name from pg_prepared_statements where from_sql')) {
    await sql.unsafe(`deallocate "${name.replaceAll('"', '""')}"`);
  }
  await sql.unsafe('reset all');
  // What openDatabase set on the session, as createTestDatabase opens it (default settings).
  for (const [name, value] of Object.entries(connectionParameters(defaultDatabaseSettings, 'embedded'))) {
    await sql`select set_config(${name}, ${value}, false)`;
  }
}

/** Puts the template's rows back: every table emptied, the seeded rows and every sequence restored. */
async function resetData(sql: Sql, snapshot: TemplateSnapshot): Promise<void> {
  await sql.begin(async (tx) => {
    if (snapshot.tables.length) await tx.unsafe(`truncate ${snapshot.tables.join(', ')} restart identity cascade`);
    // Replica role: no triggers and no foreign-key checks while the rows go back, in any order.
    await tx.unsafe('set local session_replication_role = replica');
    for (const { table, columns, rows } of snapshot.seeded) {
      const list = columns.join(', ');
      await tx.unsafe(`insert into ${table} (${list}) overriding system value select ${list} from json_populate_recordset(null::${table}, $1::text::json)`, [rows]);
    }
    for (const { sequence, lastValue, isCalled } of snapshot.sequences) {
      await tx.unsafe('select setval($1::regclass, $2::bigint, $3)', [sequence, lastValue, isCalled]);
    }
  });
}

/** Resets `sql` to the template, or throws when it cannot be trusted to hold it. */
async function resetToTemplate(db: Database, snapshot: TemplateSnapshot): Promise<void> {
  await db.ping();
  await resetSession(db.sql);
  if ((await schemaDigestOf(db.sql)) !== snapshot.schemaDigest) throw new Error('schema changed');
  if ((await settingsDigestOf(db.sql)) !== snapshot.settingsDigest) throw new Error('settings changed');
  await resetData(db.sql, snapshot);
}

// One idle database per worker process: a file rarely holds two at a time, and each holds a
// PGlite heap of its own.
const MAX_IDLE = 1;

const idle: PoolableDatabase[] = [];
let snapshot: Promise<TemplateSnapshot> | undefined;
/** Data directories of every database the pool holds or has handed out, deleted at exit. */
const owned = new Set<string>();
let exitHookInstalled = false;
let opens = 0;

/** How many databases the pool has opened in this process (its tests tell a reused one from a new one). */
export function pooledDatabaseOpens(): number {
  return opens;
}

// A worker process ends without an event loop to close databases on: vitest stops it with
// SIGTERM. The PGlite threads end with it; only the data directories (40 MB each, in RAM on
// /dev/shm) would stay behind, so they go synchronously, and the signal is raised again for its
// default action.
function removeOwnedDirs(): void {
  for (const dir of owned) rmSync(dir, { recursive: true, force: true });
  owned.clear();
}
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', removeOwnedDirs);
  const onTerm = () => {
    removeOwnedDirs();
    process.off('SIGTERM', onTerm);
    process.kill(process.pid, 'SIGTERM');
  };
  process.on('SIGTERM', onTerm);
}

async function discard(entry: PoolableDatabase): Promise<void> {
  try {
    await entry.db.close();
  } finally {
    owned.delete(entry.dataDir);
    await rm(entry.dataDir, { recursive: true, force: true });
  }
}

/**
 * A database holding exactly the migrated template: an idle pooled one, or one `open` makes (and
 * the pool keeps after use). Its close() resets it and returns it to the pool, or closes it.
 */
export async function takePooledDatabase(open: () => Promise<PoolableDatabase>): Promise<Database> {
  installExitHook();
  let entry = idle.pop();
  if (!entry) {
    entry = await open();
    opens += 1;
    owned.add(entry.dataDir);
    const opened = entry;
    // Read from the first database the pool opens, before any test touched it.
    snapshot ??= snapshotOf(opened.db.sql).catch((error: unknown) => {
      snapshot = undefined;
      throw error;
    });
    try {
      await snapshot;
    } catch (error) {
      await discard(opened);
      throw error;
    }
  }
  return lend(entry);
}

/** The pooled database as a test file sees it: its own listeners, released by close(). */
function lend(entry: PoolableDatabase): Database {
  const { db } = entry;
  const stops = new Set<() => void>();
  let closing: Promise<void> | undefined;
  return {
    ...db,
    // The client remembers which channels its session LISTENs on, and the reset UNLISTENs them
    // all: LISTEN again (a no-op when already listening) so this file's listeners hear.
    async listen(channel, onNotify, onListen) {
      await db.sql`listen ${db.sql(channel)}`;
      const stop = await db.listen(channel, onNotify, onListen);
      const once = () => {
        stops.delete(once);
        stop();
      };
      stops.add(once);
      return once;
    },
    close() {
      closing ??= (async () => {
        for (const stop of [...stops]) stop();
        try {
          await resetToTemplate(db, await snapshot!);
        } catch (error) {
          if (process.env.DEBUG_DATABASE_POOL) console.error('database pool: discarding a database:', error);
          await discard(entry);
          return;
        }
        if (idle.length < MAX_IDLE) idle.push(entry);
        else await discard(entry);
      })();
      return closing;
    },
  };
}

/** Closes every idle database (tests of the pool itself). */
export async function drainPool(): Promise<void> {
  for (const entry of idle.splice(0)) await discard(entry);
}

// The embedded database runs PGlite in a worker thread (src/db/embedded.ts, embedded-thread.ts):
// a long statement leaves the main thread's event loop free, and a thread that dies makes queries
// fail instead of hanging while close() still resolves. Ordering and outcomes only, never timings.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { openAsBlob } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { embeddedClientOptions } from '../../src/db/connection.ts';
import { embeddedDatabaseExists, embeddedPgDataPath, startEmbeddedDatabase } from '../../src/db/embedded.ts';

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(inject('testScratchRoot'), 'workspace-api-test-'));
});
afterEach(() => rm(dataDir, { recursive: true, force: true }));

const require = createRequire(import.meta.url);
const template = () => openAsBlob(inject('templateDataDir'));
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the embedded database thread', () => {
  it('runs a long statement while the main thread keeps serving its event loop', async () => {
    const db = await startEmbeddedDatabase({ dataDir, loadDataDir: await template() });
    const sql = postgres(db.url, embeddedClientOptions);
    try {
      // The statement writes a file once it runs, then spins until the main thread writes "go" into
      // another: it can only end "signalled" if timers and file I/O ran here while it was running.
      // (Were PGlite on this thread, nothing here would run until it gave up.)
      const pgData = embeddedPgDataPath(dataDir);
      const signal = join(pgData, 'test-signal');
      const started = join(pgData, 'test-started');
      await writeFile(signal, 'wait');
      await sql`
        create function wait_for_signal() returns text language plpgsql as $$
        begin
          execute format('copy (select 1) to %L', current_setting('data_directory') || '/test-started');
          loop
            -- pg_read_file sees another writer's bytes at once (pg_stat_file's lookups do not).
            if pg_read_file('test-signal') = 'go' then return 'signalled'; end if;
            if clock_timestamp() > statement_timestamp() + interval '20 s' then return 'gave up'; end if;
          end loop;
        end $$`;

      const events: string[] = [];
      const statement = sql`select wait_for_signal() as outcome`.then(([row]) => {
        events.push('statement ended');
        return row!.outcome as string;
      });
      while (!(await readFile(started, 'utf8').catch(() => ''))) await delay(5);
      events.push('main thread saw it running');
      // Noted before the write: the statement may see "go" and end before writeFile's promise settles.
      events.push('main thread signals');
      await writeFile(signal, 'go');

      expect(await statement).toBe('signalled');
      expect(events).toEqual(['main thread saw it running', 'main thread signals', 'statement ended']);
      // The one connection goes on serving after the statement.
      expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
    } finally {
      await sql.end();
      await db.close();
    }
  });

  it('dies visibly: queries fail, a dump rejects, close() resolves and frees the data directory', async () => {
    const db = await startEmbeddedDatabase({ dataDir, loadDataDir: await template() });
    const sql = postgres(db.url, embeddedClientOptions);
    try {
      await sql`create table kept (note text)`;
      await sql`insert into kept values ('before the crash')`;
      db.crashThread();
      // Without its thread the server is gone: the open connection drops and reconnecting is refused.
      await expect(until(() => sql`select 1`)).rejects.toThrow();
      await expect(sql`select 1`).rejects.toThrow(/ECONNREFUSED|ECONNRESET|CONNECTION_CLOSED/);
      await expect(db.dumpDataDir()).rejects.toThrow(/embedded database thread stopped \(exit code 1\): Error: embedded database thread crash requested/);
    } finally {
      await sql.end({ timeout: 0 });
    }
    await db.close();
    await db.close();
    await expect(stat(`${embeddedPgDataPath(dataDir)}.lock`)).rejects.toThrow(/ENOENT/);

    // The lock is released, and PostgreSQL's own recovery reopens what the dead thread left.
    const again = await startEmbeddedDatabase({ dataDir });
    const second = postgres(again.url, embeddedClientOptions);
    try {
      expect(await second`select note from kept`).toEqual([{ note: 'before the crash' }]);
    } finally {
      await second.end();
      await again.close();
    }
  });

  it('rejects a start that fails in the thread with its error, keeps the marker and frees the lock', async () => {
    // PGlite throws a bare TypeError (no message; its cause says "incorrect header check") on this.
    const start = startEmbeddedDatabase({ dataDir, loadDataDir: new Blob(['not a tarball '.repeat(100)]) });
    await expect(start).rejects.toThrow(/failed to start: TypeError \(incorrect header check\)/);
    expect(await embeddedDatabaseExists(dataDir)).toBe(false); // the `.creating` marker stayed
    await expect(stat(`${embeddedPgDataPath(dataDir)}.lock`)).rejects.toThrow(/ENOENT/);
  });

  it('does not keep the process alive once closed', async () => {
    // A child process that opens, queries and closes the database, then simply runs out of work.
    // (A file, not --input-type with -e: the thread inherits the process's flags, and that one
    // refuses to run a file.)
    const script = join(dataDir, 'open-and-close.mjs');
    await writeFile(
      script,
      `
      import postgres from ${JSON.stringify(pathToFileURL(require.resolve('postgres')).href)};
      import { openAsBlob } from 'node:fs';
      import { startEmbeddedDatabase } from ${JSON.stringify(new URL('../../src/db/embedded.ts', import.meta.url).href)};
      const db = await startEmbeddedDatabase({ dataDir: process.argv[2], loadDataDir: await openAsBlob(process.argv[3]) });
      const sql = postgres(db.url, { max: 1 });
      await sql\`select 1\`;
      await sql.end();
      await db.close();
      console.log('closed');`,
    );
    const child = spawn(process.execPath, [script, join(dataDir, 'data'), inject('templateDataDir')], {
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 25_000, // a child the thread kept alive is killed: code null
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect({ code, output: output.trim() }).toEqual({ code: 0, output: 'closed' });
  });
});

/** Repeats `query` until it fails (the first may still be answered while the thread is dying). */
async function until(query: () => Promise<unknown>): Promise<never> {
  for (;;) {
    await query();
    await delay(10);
  }
}

/**
 * The real-PostgreSQL rows of the benchmarks: one throwaway PostgreSQL 15 server with pgvector
 * (scripts/pg-server.sh, which installs both from Debian when run as root), shared by the benches
 * of a run, each in its own database. When the server cannot be had (not root and not installed,
 * no network for apt) the caller gets the reason and prints it instead of those rows.
 */
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { openDatabase, type Database } from '../src/db/connection.ts';
import { migrate } from '../src/db/migrations.ts';
import { openBenchDatabase } from './support.ts';

const script = fileURLToPath(new URL('../scripts/pg-server.sh', import.meta.url));
const run = promisify(execFile);

/**
 * Server settings for the benchmarks: the whole search corpus (table and HNSW index, about 600 MB
 * at 100 000 chunks) fits in shared buffers, and the index build gets the memory pgvector asks for
 * (an HNSW graph that outgrows maintenance_work_mem builds far slower).
 */
const SETTINGS = ['-c shared_buffers=1GB', '-c maintenance_work_mem=1GB', '-c max_parallel_maintenance_workers=1', '-c max_wal_size=4GB'];

export interface RealServer {
  url: string;
  /** e.g. "PostgreSQL 15.20, pgvector 0.8.0" */
  version: string;
  /** A new, migrated database on the server (the app's client: a pool of 10) and its URL. */
  database(name: string): Promise<{ db: Database; url: string }>;
  stop(): Promise<void>;
}

export type RealServerOrSkip = { server: RealServer; skipped?: undefined } | { server?: undefined; skipped: string };

export async function startRealServer(): Promise<RealServerOrSkip> {
  if (process.env.BENCH_REAL_PG === 'off') return { skipped: 'BENCH_REAL_PG=off' };
  const dir = await mkdtemp(join(tmpdir(), 'workspace-api-bench-pg-'));
  let url: string;
  try {
    const { stdout } = await run(script, ['start', dir, ...SETTINGS], { maxBuffer: 1 << 20 });
    url = stdout.trim().split('\n').at(-1)!;
  } catch (error) {
    await run(script, ['stop', dir]).catch(() => undefined);
    const said = String((error as { stderr?: string }).stderr ?? (error as Error).message)
      .trim()
      .split('\n')
      .filter(Boolean);
    return { skipped: said.at(-1) ?? 'scripts/pg-server.sh start failed' };
  }
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  const [row] = await admin<{ version: string }[]>`select current_setting('server_version') as version`;
  const opened: Database[] = [];
  return {
    server: {
      url,
      version: `PostgreSQL ${row!.version}, pgvector ${await vectorVersion(url)}`,
      async database(name) {
        await admin.unsafe(`create database ${name}`);
        const dbUrl = `${url.slice(0, url.lastIndexOf('/'))}/${name}`;
        const db = await openDatabase({ databaseUrl: dbUrl, dataDir: dir });
        opened.push(db);
        await migrate(db.sql);
        return { db, url: dbUrl };
      },
      async stop() {
        await Promise.allSettled(opened.map((db) => db.close()));
        await admin.end({ timeout: 1 });
        await run(script, ['stop', dir]);
      },
    },
  };
}

async function vectorVersion(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ v: string }[]>`select default_version as v from pg_available_extensions where name = 'vector'`;
    return row?.v ?? 'missing';
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/**
 * A benchmark file run alone (`node bench/<name>.ts [--embedded-only | --real-only]`): its rows on
 * the embedded database, then on a throwaway PostgreSQL 15 (or the row saying why it was skipped).
 */
export async function runStandalone(
  what: string,
  database: string,
  rows: {
    embedded(db: Database): Promise<string[][]>;
    real(db: Database): Promise<string[][]>;
    skipped(reason: string): string[][];
  },
): Promise<void> {
  const args = process.argv.slice(2);
  const out: string[][] = [];
  if (!args.includes('--real-only')) {
    const db = await openBenchDatabase();
    try {
      console.log(`${what} on the embedded database:`);
      out.push(...(await rows.embedded(db)));
    } finally {
      await db.close();
    }
  }
  if (!args.includes('--embedded-only')) {
    const real = await startRealServer();
    if (real.skipped !== undefined) out.push(...rows.skipped(real.skipped));
    else {
      try {
        console.log(`${what} on ${real.server.version}:`);
        out.push(...(await rows.real((await real.server.database(database)).db)));
      } finally {
        await real.server.stop();
      }
    }
  }
  for (const row of out) console.log(row.join('  |  '));
}

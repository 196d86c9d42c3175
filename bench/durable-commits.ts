/**
 * What a durable commit costs on the embedded database: commits per second with PostgreSQL's
 * fsync on (the default: each commit waits for fdatasync of its WAL, src/db/embedded-thread.ts)
 * against fsync off (PGlite's own default: the commit is only in the page cache), in the same run.
 * Each side is a fresh embedded database from the migrated template, in its thread as the service
 * runs it, reached by postgres.js with the service's client options (one connection):
 *   - single-row INSERT commits, one at a time;
 *   - the same, 8 at a time (queued on the one connection: PGlite has no group commit);
 *   - a transaction of 50 rows, one at a time (the fsync's cost spread over more work).
 * Rounds in the order off, on, on, off (a machine that gets busier or quieter meanwhile weighs on
 * both sides alike); each figure is the mean of the rounds. Reports durable / relaxed ratios. A
 * measurement, not a test: nothing fails.
 *   node bench/durable-commits.ts
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { embeddedClientOptions } from '../src/db/connection.ts';
import { startEmbeddedDatabase } from '../src/db/embedded.ts';
import { templateBlob } from '../src/composition/database-template.ts';
import { printRows } from './print-rows.ts';

const COMMITS = 400;
const CONCURRENT = 8;
const BATCH_ROWS = 50;
const BATCHES = 100;
const ORDER = [false, true, true, false];

export interface CommitRates {
  /** Commits per second: one at a time, 8 at a time, 50-row transactions one at a time. */
  serial: number;
  concurrent: number;
  batches: number;
}

async function measure(fsync: boolean): Promise<CommitRates> {
  const dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-bench-durable-'));
  try {
    const db = await startEmbeddedDatabase({ dataDir, loadDataDir: await templateBlob(), fsync });
    const sql = postgres(db.url, embeddedClientOptions);
    try {
      await sql`create table bench_commits (id bigserial primary key, body text not null)`;
      const body = 'x'.repeat(200);
      const rate = async (count: number, run: () => Promise<unknown>) => {
        const started = performance.now();
        await run();
        return count / ((performance.now() - started) / 1000);
      };
      const serial = await rate(COMMITS, async () => {
        for (let i = 0; i < COMMITS; i++) await sql`insert into bench_commits (body) values (${body})`;
      });
      const concurrent = await rate(COMMITS, async () => {
        let next = 0;
        const loop = async () => {
          while (next++ < COMMITS) await sql`insert into bench_commits (body) values (${body})`;
        };
        await Promise.all(Array.from({ length: CONCURRENT }, loop));
      });
      const rows = Array.from({ length: BATCH_ROWS }, () => ({ body }));
      const batches = await rate(BATCHES, async () => {
        for (let i = 0; i < BATCHES; i++) await sql.begin((tx) => tx`insert into bench_commits ${tx(rows)}`);
      });
      return { serial, concurrent, batches };
    } finally {
      await sql.end();
      await db.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

export async function benchDurableCommits(): Promise<{ durable: CommitRates; relaxed: CommitRates }> {
  const runs: { fsync: boolean; rates: CommitRates }[] = [];
  for (const fsync of ORDER) runs.push({ fsync, rates: await measure(fsync) });
  const mean = (fsync: boolean): CommitRates => {
    const mine = runs.filter((run) => run.fsync === fsync).map((run) => run.rates);
    const avg = (key: keyof CommitRates) => mine.reduce((sum, rates) => sum + rates[key], 0) / mine.length;
    return { serial: avg('serial'), concurrent: avg('concurrent'), batches: avg('batches') };
  };
  return { durable: mean(true), relaxed: mean(false) };
}

export async function durableCommitRows(): Promise<string[][]> {
  console.log('embedded database: durable commits (fsync on) vs fsync off:');
  const { durable, relaxed } = await benchDurableCommits();
  const row = (label: string, key: keyof CommitRates) => [label, `${(durable[key] / relaxed[key]).toFixed(2)}  (${Math.round(durable[key])} / ${Math.round(relaxed[key])} commits/s)`, ''];
  return [row('commits/s one at a time, fsync on / off', 'serial'), row(`  ${CONCURRENT} at a time on the one connection`, 'concurrent'), row(`  transactions of ${BATCH_ROWS} rows`, 'batches')];
}

if (import.meta.main) {
  const rows = [['measure', 'result', 'aim'], ...(await durableCommitRows())];
  printRows(rows);
}

/**
 * The embedded database in its worker thread (src/db/embedded.ts, as the service runs it) against
 * the baseline built here: PGlite and its socket server on this, the API's, thread (as before).
 * Each side starts from the migrated template, is reached by postgres.js over loopback with the
 * service's client options (one connection), and runs the same workloads:
 *   - the latency of a tiny HTTP request to a bare node:http server on this thread (open-loop
 *     probe in a child process, latency-probe.ts, every 10 ms), idle, then while the job worker's
 *     kind of statement runs (inserting 2 000 vectors of 384 dimensions into an HNSW-indexed table,
 *     50 rows a statement), then during one long statement (`count(*)` over 3 million rows);
 *   - point selects by primary key, one at a time and 8 at a time (queued on the one connection);
 *   - the start (template unpacked, server listening, first answer).
 * Two rounds in the order main, thread, thread, main (a machine that gets busier or quieter meanwhile
 * weighs on both sides alike); latencies are percentiles of both rounds' requests, the rest means.
 * Reports each figure as a ratio thread / main thread. A measurement, not a test: nothing fails
 * when a figure misses its aim.
 *   node bench/embedded-thread.ts
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { pgcrypto } from '@electric-sql/pglite/contrib/pgcrypto';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import postgres from 'postgres';
import { embeddedClientOptions, type Sql } from '../src/db/connection.ts';
import { embeddedPgDataPath, startEmbeddedDatabase } from '../src/db/embedded.ts';
import { templateBlob } from '../src/composition/database-template.ts';
import type { ProbeMessage, ProbeResult } from './latency-probe.ts';
import { percentile, startBareServer } from './support.ts';
import { printRows } from './print-rows.ts';

/** Aims: request p99 while PGlite works, thread / main thread; point-select throughput, thread / main thread. */
export const EMBEDDED_THREAD_AIM = { latency: 0.1, throughput: 0.8 };
const PROBE_INTERVAL_MS = 10;
const VECTORS = 2000;
const VECTORS_PER_STATEMENT = 50;
const DIMENSIONS = 384;
const LONG_STATEMENT_ROWS = 3_000_000;
const POINT_SELECTS = 6000;
const ROUNDS = 2;

interface Window {
  p50: number;
  p99: number;
  max: number;
  requests: number;
}

export interface SideResult {
  startMs: number;
  idle: Window;
  inserting: Window;
  insertSeconds: number;
  longStatement: Window;
  longStatementSeconds: number;
  /** Point selects per second, one at a time and 8 at a time. */
  selectsSerial: number;
  selectsConcurrent: number;
  /** Probe requests that failed (not a 200) in all windows. */
  probeErrors: number;
}

export interface EmbeddedThreadResult {
  thread: SideResult;
  main: SideResult;
}

interface Side {
  url: string;
  close(): Promise<void>;
}

/** What the service runs: startEmbeddedDatabase, PGlite in its worker thread. */
async function threadSide(dataDir: string, template: Blob): Promise<Side> {
  return startEmbeddedDatabase({ dataDir, loadDataDir: template });
}

/** The baseline: the same PGlite, extensions and server, on this thread. */
async function mainThreadSide(dataDir: string, template: Blob): Promise<Side> {
  const db = await PGlite.create(embeddedPgDataPath(dataDir), { extensions: { vector, pgcrypto }, loadDataDir: template });
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 1 });
  await server.start();
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    async close() {
      await server.stop();
      await db.close();
    },
  };
}

function startProbe() {
  const child = fork(fileURLToPath(new URL('./latency-probe.ts', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return {
    async during<T>(url: string, work: () => Promise<T>): Promise<{ result: T; probe: ProbeResult }> {
      const answer = once(child, 'message').then(([message]) => message as ProbeResult);
      child.send({ type: 'start', targets: [{ name: 'request', url }], intervalMs: PROBE_INTERVAL_MS, maxMs: 600_000 } satisfies ProbeMessage);
      const stopped = () => {
        child.send({ type: 'stop' } satisfies ProbeMessage);
        return answer;
      };
      try {
        return { result: await work(), probe: await stopped() };
      } catch (error) {
        await stopped();
        throw error;
      }
    },
    close: () => child.disconnect(),
  };
}

/** A unit vector of random direction, as pgvector's text input. */
function randomVector(): string {
  const values = Array.from({ length: DIMENSIONS }, () => Math.random() - 0.5);
  const norm = Math.hypot(...values);
  return `[${values.map((value) => (value / norm).toFixed(6)).join(',')}]`;
}

async function insertVectors(sql: Sql): Promise<number> {
  await sql`create table bench_vectors (id serial primary key, embedding vector(${sql.unsafe(String(DIMENSIONS))}) not null)`;
  await sql`create index on bench_vectors using hnsw (embedding vector_cosine_ops)`;
  const started = performance.now();
  for (let done = 0; done < VECTORS; done += VECTORS_PER_STATEMENT) {
    const batch = Array.from({ length: VECTORS_PER_STATEMENT }, randomVector);
    await sql`insert into bench_vectors (embedding) select value::vector from unnest(${batch}::text[]) as value`;
  }
  return (performance.now() - started) / 1000;
}

async function longStatement(sql: Sql): Promise<number> {
  const started = performance.now();
  await sql`select count(*) from generate_series(1, ${LONG_STATEMENT_ROWS}::int)`;
  return (performance.now() - started) / 1000;
}

/** Point selects per second with `parallel` loops sharing the one connection. */
async function pointSelects(sql: Sql, parallel: number): Promise<number> {
  const each = Math.ceil(POINT_SELECTS / parallel);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async (_, loop) => {
      for (let i = 0; i < each; i++) await sql`select note from bench_points where id = ${((loop * each + i) % 1000) + 1}`;
    }),
  );
  return (each * parallel) / ((performance.now() - started) / 1000);
}

/** One side's figures of one round: raw latencies, so that rounds merge before percentiles. */
interface Round {
  startMs: number;
  idle: ProbeResult;
  inserting: ProbeResult;
  insertSeconds: number;
  longStatement: ProbeResult;
  longStatementSeconds: number;
  selectsSerial: number;
  selectsConcurrent: number;
}

async function measure(open: (dataDir: string, template: Blob) => Promise<Side>, template: Blob, probe: ReturnType<typeof startProbe>, bareUrl: string): Promise<Round> {
  const dataDir = await mkdtemp(join(tmpdir(), 'workspace-api-bench-'));
  try {
    const started = performance.now();
    const side = await open(dataDir, template);
    const sql = postgres(side.url, embeddedClientOptions);
    try {
      await sql`select 1`;
      const startMs = performance.now() - started;
      await sql`create table bench_points (id int primary key, note text not null)`;
      await sql`insert into bench_points select i, md5(i::text) from generate_series(1, 1000) as i`;
      await pointSelects(sql, 8); // warm-up: the client's and the server's code paths
      const selectsSerial = await pointSelects(sql, 1);
      const selectsConcurrent = await pointSelects(sql, 8);

      const idle = await probe.during(bareUrl, () => new Promise((resolve) => setTimeout(resolve, 3000)));
      const inserting = await probe.during(bareUrl, () => insertVectors(sql));
      const long = await probe.during(bareUrl, () => longStatement(sql));
      return {
        startMs,
        idle: idle.probe,
        inserting: inserting.probe,
        insertSeconds: inserting.result,
        longStatement: long.probe,
        longStatementSeconds: long.result,
        selectsSerial,
        selectsConcurrent,
      };
    } finally {
      await sql.end();
      await side.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

function combine(rounds: Round[]): SideResult {
  const window = (pick: (round: Round) => ProbeResult): Window => {
    const values = rounds.flatMap((round) => pick(round).latencies.request!);
    return { p50: percentile(values, 50), p99: percentile(values, 99), max: Math.max(...values), requests: values.length };
  };
  const mean = (pick: (round: Round) => number) => rounds.reduce((sum, round) => sum + pick(round), 0) / rounds.length;
  return {
    startMs: mean((r) => r.startMs),
    idle: window((r) => r.idle),
    inserting: window((r) => r.inserting),
    insertSeconds: mean((r) => r.insertSeconds),
    longStatement: window((r) => r.longStatement),
    longStatementSeconds: mean((r) => r.longStatementSeconds),
    selectsSerial: mean((r) => r.selectsSerial),
    selectsConcurrent: mean((r) => r.selectsConcurrent),
    probeErrors: rounds.reduce((sum, r) => sum + r.idle.errors + r.inserting.errors + r.longStatement.errors, 0),
  };
}

export async function benchEmbeddedThread(): Promise<EmbeddedThreadResult> {
  const template = await templateBlob();
  const bare = await startBareServer();
  const probe = startProbe();
  try {
    const rounds = { main: [] as Round[], thread: [] as Round[] };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['main', 'thread'] as const) : (['thread', 'main'] as const);
      for (const name of order) rounds[name].push(await measure(name === 'main' ? mainThreadSide : threadSide, template, probe, bare.url));
    }
    const show = (name: string, r: SideResult) => {
      const w = (window: Window) => `p50 ${window.p50.toFixed(1)} p99 ${window.p99.toFixed(1)} max ${window.max.toFixed(0)} ms (${window.requests})`;
      console.log(`  ${name}: start ${r.startMs.toFixed(0)} ms; request idle ${w(r.idle)}`);
      console.log(`    inserting ${VECTORS} vectors (${r.insertSeconds.toFixed(1)} s): ${w(r.inserting)}`);
      console.log(`    one statement over ${LONG_STATEMENT_ROWS} rows (${r.longStatementSeconds.toFixed(1)} s): ${w(r.longStatement)}`);
      console.log(`    point selects/s: ${Math.round(r.selectsSerial)} one at a time, ${Math.round(r.selectsConcurrent)} 8 at a time; ${r.probeErrors} failed probes`);
    };
    const main = combine(rounds.main);
    const thread = combine(rounds.thread);
    show(`PGlite on the main thread (${ROUNDS} rounds)`, main);
    show(`PGlite in its thread (${ROUNDS} rounds)`, thread);
    return { thread, main };
  } finally {
    probe.close();
    await bare.close();
  }
}

/** Rows for bench/index.ts's table. */
export async function embeddedThreadRows(): Promise<string[][]> {
  console.log('embedded database: PGlite in its worker thread vs on the main thread:');
  const { thread, main } = await benchEmbeddedThread();
  const ratio = (a: number, b: number) => (a / b).toFixed(a / b < 0.1 ? 3 : 2);
  const ms = (value: number) => value.toFixed(1);
  return [
    [
      `request p99 while inserting ${VECTORS} vectors (HNSW), thread / main thread`,
      `${ratio(thread.inserting.p99, main.inserting.p99)}  (${ms(thread.inserting.p99)} / ${ms(main.inserting.p99)} ms; max ${thread.inserting.max.toFixed(0)} / ${main.inserting.max.toFixed(0)})`,
      `<= ${EMBEDDED_THREAD_AIM.latency}`,
    ],
    [
      `  same, during one ${main.longStatementSeconds.toFixed(1)} s statement (${LONG_STATEMENT_ROWS / 1e6}M rows)`,
      `${ratio(thread.longStatement.p99, main.longStatement.p99)}  (${ms(thread.longStatement.p99)} / ${ms(main.longStatement.p99)} ms)`,
      `<= ${EMBEDDED_THREAD_AIM.latency}`,
    ],
    [
      '  thread: p99 while inserting / idle',
      `${ratio(thread.inserting.p99, thread.idle.p99)}  (${ms(thread.inserting.p99)} / ${ms(thread.idle.p99)} ms; failed probes ${thread.probeErrors} / ${main.probeErrors})`,
      '',
    ],
    ['  insert time, thread / main thread', `${ratio(thread.insertSeconds, main.insertSeconds)}  (${thread.insertSeconds.toFixed(1)} / ${main.insertSeconds.toFixed(1)} s)`, ''],
    [
      'point selects/s one at a time, thread / main thread',
      `${ratio(thread.selectsSerial, main.selectsSerial)}  (${Math.round(thread.selectsSerial)} / ${Math.round(main.selectsSerial)})`,
      `>= ${EMBEDDED_THREAD_AIM.throughput}`,
    ],
    [
      '  8 at a time on the one connection',
      `${ratio(thread.selectsConcurrent, main.selectsConcurrent)}  (${Math.round(thread.selectsConcurrent)} / ${Math.round(main.selectsConcurrent)})`,
      `>= ${EMBEDDED_THREAD_AIM.throughput}`,
    ],
    ['  start from the template, thread / main thread', `${ratio(thread.startMs, main.startMs)}  (${Math.round(thread.startMs)} / ${Math.round(main.startMs)} ms)`, ''],
  ];
}

if (import.meta.main) {
  const rows = [['measure', 'result', 'aim'], ...(await embeddedThreadRows())];
  printRows(rows);
}

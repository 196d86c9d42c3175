/**
 * Queue throughput: no-op jobs through pg-boss as the service runs it (startJobQueue + work, the
 * same options, src/jobs/queue.ts) against a plain `FOR UPDATE SKIP LOCKED` loop on a simple table
 * of the same database, at the same concurrency, each draining a backlog for a fixed window.
 *
 * The plain loop claims a row (`update ... where id = (select ... for update skip locked limit 1)
 * returning`), runs the no-op and marks it completed: the two round trips pg-boss also makes per
 * job (fetch, complete), without its bookkeeping. pg-boss runs as the service configures it: 4
 * workers each fetching WORKER_BATCH_SIZE jobs at a time (4 on the embedded database, 1 on a server;
 * BENCH_BATCH_SIZE overrides it here). Two variants:
 * - as configured: batch size 1 and no burst option, so after each job a worker waits its polling
 *   interval (2 s; 10 s where LISTEN/NOTIFY is on, i.e. on a real server) unless something wakes
 *   it. A backlog therefore drains at about one job per worker per interval; the window is longer.
 * - woken after each job: the run ends with `queue.wake()` (what a worker could do for itself: a
 *   worker that just finished a job fetches again at once; an empty fetch falls back to polling).
 * Enqueueing (queue.enqueue, one pg-boss send per job, 8 at a time) is reported for scale.
 * Windows are short (3 s, 6 s for the polling variant) and rounds alternate; on a real server the
 * first and second half of each window are reported apart, since postgres.js' pool slows down
 * under sustained saturation (toolchain.md). A measurement, not a test: nothing fails.
 *   node bench/queue.ts [--embedded-only | --real-only]
 */
import type { Database } from '../src/db/connection.ts';
import { loadConfig } from '../src/config.ts';
import { newId } from '../src/ids.ts';
import { startJobQueue, type JobQueue } from '../src/jobs/queue.ts';
import { config, logger, median } from './support.ts';
import { runStandalone } from './pg-server.ts';

export const QUEUE_AIM = 0.35; // pg-boss jobs/s at least 0.35 of the plain loop's
const CONCURRENCY = 4;
const WINDOW_MS = 3000;
const POLLING_WINDOW_MS = 6000;

interface Window {
  jobsPerSecond: number;
  /** Jobs/s in the first and second half of the window. */
  halves: [number, number];
}

export interface QueueResult {
  where: string;
  concurrency: number;
  plain: Window;
  woken: Window;
  configured: Window;
  /** woken / plain, median of per-round ratios. */
  ratio: number;
  configuredRatio: number;
  enqueuePerSecond: number;
}

function rate(stamps: number[], started: number, ms: number): Window {
  const half = stamps.filter((at) => at - started < ms / 2).length;
  return { jobsPerSecond: (stamps.length * 1000) / ms, halves: [(half * 2000) / ms, ((stamps.length - half) * 2000) / ms] };
}

async function backlog(db: Database): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`select count(*)::int as n from pgboss.job where name = 'jobs' and state = 'created'`;
  return row!.n;
}

/** Tops the pg-boss backlog up to `size` jobs; answers enqueues per second. */
async function fill(db: Database, queue: JobQueue, size: number): Promise<number> {
  const missing = size - (await backlog(db));
  if (missing <= 0) return NaN;
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next++ < missing) await queue.enqueue(db.sql, newId('job'));
    }),
  );
  return (missing * 1000) / (performance.now() - started);
}

/** What the service configures for this database (config.ts, WORKER_BATCH_SIZE), or BENCH_BATCH_SIZE. */
function batchSizeFor(db: Database): number {
  const chosen = Number(process.env.BENCH_BATCH_SIZE);
  if (chosen >= 1) return chosen;
  return loadConfig(db.kind === 'external' ? { DATABASE_URL: db.url } : {}).worker.batchSize;
}

async function runBoss(db: Database, { wake, ms }: { wake: boolean; ms: number }): Promise<Window> {
  const queue = await startJobQueue({ db, settings: config.worker, logger, worker: true });
  const stamps: number[] = [];
  let started = 0;
  let open = true;
  try {
    started = performance.now();
    await queue.work(
      async () => {
        if (open) stamps.push(performance.now());
        if (wake) queue.wake();
      },
      CONCURRENCY,
      batchSizeFor(db),
    );
    await new Promise((resolve) => setTimeout(resolve, ms - (performance.now() - started)));
    open = false;
  } finally {
    await queue.stop();
  }
  return rate(stamps, started, ms);
}

async function runPlain(db: Database, ms: number): Promise<Window> {
  const { sql } = db;
  const stamps: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() - started < ms) {
        const [job] = await sql<{ id: string }[]>`
        update bench_plain_queue set state = 'active', started_at = now()
        where id = (select id from bench_plain_queue where state = 'created' order by id for update skip locked limit 1)
        returning id, data`;
        if (!job) throw new Error('the plain backlog ran out; make it larger');
        await sql`update bench_plain_queue set state = 'completed', completed_at = now() where id = ${job.id}`;
        if (performance.now() - started < ms) stamps.push(performance.now());
      }
    }),
  );
  return rate(stamps, started, ms);
}

export async function benchQueue(db: Database, where: string, { rounds = 2, backlogSize = 4000 } = {}): Promise<QueueResult> {
  await db.sql`
    create table bench_plain_queue (
      id bigserial primary key, data jsonb not null, state text not null default 'created',
      created_at timestamptz not null default now(), started_at timestamptz, completed_at timestamptz)`;
  await db.sql`create index bench_plain_queue_created on bench_plain_queue (id) where state = 'created'`;
  // A queue without workers creates pg-boss's schema and queues and lets us fill the backlog.
  const producer = await startJobQueue({ db, settings: config.worker, logger, worker: false });
  const enqueueRates: number[] = [];
  const windows: { plain: Window[]; woken: Window[] } = { plain: [], woken: [] };
  const ratios: number[] = [];
  let configured: Window;
  try {
    enqueueRates.push(await fill(db, producer, backlogSize));
    for (let round = 1; round <= rounds; round++) {
      // The plain backlog costs one statement: make it larger than any loop can drain in a window.
      await db.sql`insert into bench_plain_queue (data) select jsonb_build_object('jobId', 'job_' || n) from generate_series(1, 100000) n`;
      const filled = await fill(db, producer, backlogSize);
      if (!Number.isNaN(filled)) enqueueRates.push(filled);
      const order = round % 2 ? (['plain', 'woken'] as const) : (['woken', 'plain'] as const);
      for (const name of order) {
        windows[name].push(name === 'plain' ? await runPlain(db, WINDOW_MS) : await runBoss(db, { wake: true, ms: WINDOW_MS }));
      }
      if ((await backlog(db)) === 0) console.log('  (the pg-boss backlog ran out during the window: its rate is understated; raise backlogSize)');
      ratios.push(windows.woken.at(-1)!.jobsPerSecond / windows.plain.at(-1)!.jobsPerSecond);
      const show = (w: Window) => `${Math.round(w.jobsPerSecond)} jobs/s (halves ${w.halves.map(Math.round).join(' / ')})`;
      console.log(`  queue round ${round}: plain loop ${show(windows.plain.at(-1)!)}, pg-boss woken after each job ${show(windows.woken.at(-1)!)}; ratio ${ratios.at(-1)!.toFixed(2)}`);
    }
    // Topped up again: the woken windows may have drained it, and an empty backlog measures nothing.
    const filled = await fill(db, producer, backlogSize);
    if (!Number.isNaN(filled)) enqueueRates.push(filled);
    configured = await runBoss(db, { wake: false, ms: POLLING_WINDOW_MS });
    console.log(`  pg-boss as configured (polling between jobs): ${configured.jobsPerSecond.toFixed(1)} jobs/s over ${POLLING_WINDOW_MS / 1000} s`);
  } finally {
    await producer.stop();
    await db.sql`drop table if exists bench_plain_queue`;
    // The rest of the backlog would be fetched by the next app's inline worker on this database.
    await db.sql`delete from pgboss.job where name = 'jobs'`;
  }
  const pick = (list: Window[]) => list.slice().sort((a, b) => a.jobsPerSecond - b.jobsPerSecond)[list.length >> 1]!;
  const plain = pick(windows.plain);
  return {
    where,
    concurrency: CONCURRENCY,
    plain,
    woken: pick(windows.woken),
    configured,
    ratio: median(ratios),
    configuredRatio: configured.jobsPerSecond / plain.jobsPerSecond,
    enqueuePerSecond: median(enqueueRates),
  };
}

/** Rows for bench/index.ts's table. */
export function queueRows(result: QueueResult | { skipped: string; where: string }): string[][] {
  if ('skipped' in result) return [[`queue, ${result.where}`, `skipped: ${result.skipped}`, '']];
  const halves = (w: Window) => `${Math.round(w.halves[0])} → ${Math.round(w.halves[1])}`;
  return [
    [
      `queue no-op jobs/s, ${result.concurrency} workers (${result.where}): pg-boss as configured / plain`,
      `${result.configuredRatio.toFixed(3)}  (${result.configured.jobsPerSecond.toFixed(1)} / ${Math.round(result.plain.jobsPerSecond)})`,
      `>= ${QUEUE_AIM}`,
    ],
    [
      '  pg-boss woken after each job / plain',
      `${result.ratio.toFixed(2)}  (${Math.round(result.woken.jobsPerSecond)} / ${Math.round(result.plain.jobsPerSecond)}; halves ${halves(result.woken)} / ${halves(result.plain)})`,
      `>= ${QUEUE_AIM}`,
    ],
    ['  enqueue (pg-boss send, 8 at a time)', `${Math.round(result.enqueuePerSecond)} jobs/s`, ''],
  ];
}

if (import.meta.main) {
  await runStandalone('queue', 'bench_queue', {
    embedded: async (db) => queueRows(await benchQueue(db, 'PGlite', { backlogSize: 12_000 })),
    real: async (db) => queueRows(await benchQueue(db, 'PostgreSQL 15', { backlogSize: 20_000 })),
    skipped: (reason) => queueRows({ skipped: reason, where: 'PostgreSQL 15' }),
  });
}

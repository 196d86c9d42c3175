/**
 * The queue: pg-boss on the service's database carries the work, while the `jobs` table holds what
 * clients see (store.ts). A pg-boss job carries only our job id; the handler reads the row and
 * ignores jobs that are no longer queued (delivery is at least once).
 *
 * - Enqueueing happens inside the caller's transaction (`enqueue(tx, id)`), so a job row, its
 *   credits and its queue entry commit together or not at all.
 * - Starting: `openJobQueue` answers at once and starts pg-boss behind it (`started`), so the API
 *   listens while pg-boss runs its first statements (about 200 ms on the embedded database at a
 *   restart, a sixth of it; bench/start.ts). Enqueueing waits for `started` outside the
 *   transaction: on the embedded database pg-boss starts through the one connection that a
 *   transaction would hold.
 * - Waking: pg-boss polls (every 2 s); on an external database the queue also NOTIFYs on insert and
 *   workers LISTEN (pg-boss's own connection), and in this process `wake()` nudges the local workers at once (the embedded
 *   database serves one connection, so there the API and its inline worker share the process).
 * - Leases: a running job's worker sends heartbeats; when they stop for `leaseSeconds` (a worker
 *   died) pg-boss hands the job to another worker, counting it as a retry.
 * - Retries: a failing run is retried twice with exponential backoff before it fails for good.
 * - Traces: a job may carry the W3C trace context of the span that queued it (`trace`, job-trace.ts),
 *   which pg-boss keeps across retries and a continued slice carries on; a release that knows
 *   nothing of it reads `jobId` and `continued` only.
 * - Batches: a worker fetches up to `batchSize` jobs in one statement and runs them together; a
 *   job that fails is failed alone (`boss.fail` by its id: retried per the queue's settings), and
 *   pg-boss completes the rest of the batch in one statement (its complete() only touches jobs
 *   still active). On the embedded database, where each round trip is dear, batches of 4 doubled
 *   the no-op rate (bench/queue.ts: 0.25 → 0.49-0.58 of a plain SKIP LOCKED loop); on a server
 *   they measured 3x slower than single fetches (about 700 against 2 100 jobs/s, cause not found),
 *   so there the default is 1 (config.ts, WORKER_BATCH_SIZE).
 * - Fairness: start-time fair queueing through pg-boss's priority (it fetches by priority desc,
 *   then creation), so one payer's backlog delays another's next job by about one job, not
 *   by the whole backlog (docs/jobs.md, Fairness). The payer (organizations/payer.ts) is the
 *   organization while it has a paid plan, else its first owner: organizations cost nothing to
 *   make, so many of one owner's share one turn; "organization" below means payer. Each job gets a virtual start
 *   v = max(V, the organization's last queued v + 1) and is sent with priority -v, where V, the
 *   queue's virtual time, is the smallest v still waiting to be fetched for the first time; with
 *   none waiting, the largest v of a job running or waiting for a retry; with none of those, 0.
 *   So an organization's first job goes next to the front, its second one slot after, and an
 *   organization with a backlog takes one turn per round like every other. V only grows while
 *   the queue is busy and starts again from 0 whenever it empties; v is clamped to the int range
 *   of pg-boss's priority (past it, the queue is FIFO until it empties once: over two billion jobs
 *   without an empty moment). A run that failed keeps its priority: its v was at most V when it
 *   was fetched, so once its backoff is over it goes ahead of the waiting jobs, one job, at most
 *   twice (RETRY_LIMIT), and can never be starved. The organization's lock, count and last v are
 *   the caller's (store.ts queuedJobsOf, under lockOrganizationQueue), so creates of one
 *   organization take turns; creates of different organizations may read the same V, which costs
 *   a tie, broken by creation order.
 */
import { randomUUID } from 'node:crypto';
import { PgBoss, type Job as BossJob } from 'pg-boss';
import type { WorkerSettings } from '../config.ts';
import type { Database } from '../db/connection.ts';
import type { Db } from '../db/db.ts';
import type { Logger } from '../logger.ts';
import { carrierOf, type TraceCarrier } from './job-trace.ts';
import { bossDb } from './pg-boss-adapter.ts';
import { SessionListenDb } from './pg-boss-session-listen.ts';

export const JOBS_QUEUE = 'jobs';
export const HOUSEKEEPING_QUEUE = 'housekeeping';
/**
 * Slices of background migrations (background-migrations.ts), one job per slice, keyed by the
 * migration's name. pg-boss's `stately` policy keeps at most one waiting and one running job per
 * key, so queuing a slice that is already queued does nothing.
 */
export const BACKGROUND_MIGRATIONS_QUEUE = 'background-migrations';
/** pg-boss's own tables live in this schema. */
export const QUEUE_SCHEMA = 'pgboss';
/** A failing run is retried this many times before the job is failed (decisions.md, Jobs). */
export const RETRY_LIMIT = 2;

export interface QueuedJob {
  jobId: string;
  /**
   * The next slice of a job that is already running (workspace.index: continueRun in
   * lifecycle.ts), not a new start: its attempt is not counted again. Absent on the first delivery.
   */
  continued?: boolean;
  /** The W3C trace context of the span that created the job (job-trace.ts); absent while tracing is off. */
  trace?: TraceCarrier;
}

interface BackgroundSlice {
  name: string;
}

const QUEUES = [JOBS_QUEUE, HOUSEKEEPING_QUEUE, BACKGROUND_MIGRATIONS_QUEUE];

/** pg-boss's priority is an integer column: a virtual start never goes past this (see Fairness). */
export const MAX_VIRTUAL_START = 2_147_483_647;

/** Whose job is queued (its payer: organizations/payer.ts), and the last virtual start among that payer's queued jobs (null: none). */
export interface QueueFlow {
  payer: string;
  lastStart: number | null;
}

/** One delivery of a job to a worker: `finalAttempt` when a failure now fails the job for good. */
export interface Delivery {
  jobId: string;
  /** A running job's next slice (QueuedJob.continued). */
  continued: boolean;
  /** The span that created the job (QueuedJob.trace), or null. */
  trace: TraceCarrier | null;
  /** Seconds from when this delivery was due (queued, or its retry's backoff over) to its fetch, by the database's clock. */
  waitSeconds: number;
  finalAttempt: boolean;
  signal: AbortSignal;
  /**
   * Queues this job again, in its place and for the same organization, to be delivered after
   * `seconds` (to another worker, likely); the current delivery then ends as done.
   */
  defer(seconds: number): Promise<void>;
}

export interface JobQueue {
  /**
   * Resolves once pg-boss has started and every queue exists; rejects when they cannot. `enqueue`
   * may only be called after it: await it before opening the enqueueing transaction.
   */
  readonly started: Promise<void>;
  /**
   * Queues a job inside the caller's transaction, fairly among organizations when `flow` names its
   * organization (see Fairness; the caller holds the organization's queue lock); answers its
   * virtual start. Without a flow the job takes the queue's virtual time V. `trace` travels with
   * the job to its runs (QueuedJob.trace).
   */
  enqueue(tx: Db, jobId: string, flow?: QueueFlow, options?: { continued?: boolean; startAfterSeconds?: number; trace?: TraceCarrier | null | undefined }): Promise<number>;
  /** Nudges this process's workers to fetch now; call after the enqueueing transaction committed. */
  wake(): void;
  /**
   * Starts `concurrency` workers in this process, each fetching up to `batchSize` jobs at once
   * (default 1); `run` throws to have that delivery retried.
   */
  work(run: (delivery: Delivery) => Promise<void>, concurrency: number, batchSize?: number): Promise<void>;
  /** Runs `run` on a schedule (pg-boss cron, at most once per occurrence across every worker). */
  every(cron: string, run: () => Promise<void>): Promise<void>;
  /** Queues a slice of the named background migration, unless one is waiting already. */
  queueBackgroundMigration(name: string): Promise<void>;
  /** Runs each slice of a background migration that this process's worker takes, one at a time. */
  workBackgroundMigrations(run: (name: string) => Promise<void>): Promise<void>;
  /** Stops fetching, waits for running jobs (up to timeoutMs) and ends pg-boss's timers. */
  stop(timeoutMs?: number): Promise<void>;
}

export interface QueueOptions {
  db: Database;
  settings: Pick<WorkerSettings, 'leaseSeconds'>;
  logger: Logger;
  /** Workers run in this process: pg-boss then also supervises (expiry, heartbeats) and schedules. */
  worker: boolean;
  /** First retry delay in seconds (doubling after); tests shorten it. */
  retryDelaySeconds?: number;
  /** pg-boss's base polling interval in seconds (at least 0.5). */
  pollingSeconds?: number;
}

/** The queue, started: `openJobQueue` once its `started` has resolved. */
export async function startJobQueue(options: QueueOptions): Promise<JobQueue> {
  const queue = openJobQueue(options);
  await queue.started;
  return queue;
}

/** The queue at once, pg-boss starting behind it (`started`); `work`, `every` and `stop` wait for the start. */
export function openJobQueue(options: QueueOptions): JobQueue {
  const { db, logger, worker } = options;
  const external = db.kind === 'external';
  const leaseSeconds = options.settings.leaseSeconds;
  const pollingIntervalSeconds = options.pollingSeconds ?? 2;
  // Heartbeats are checked by the supervisor; check often enough that a dead worker's job moves on
  // about one lease after its last heartbeat.
  const checkSeconds = Math.max(1, Math.floor(leaseSeconds / 2));
  const boss = new PgBoss({
    // On a server pg-boss keeps a small pool of its own: it opens transactions of its own (BEGIN ...
    // COMMIT in one statement), which postgres.js allows only on a single-connection client, and it
    // LISTENs on a dedicated connection. The embedded database serves a single connection, shared
    // through our client. Enqueueing always goes through the caller's transaction (`enqueue`).
    // query_timeout (node-postgres's client-side deadline, passed through by pg-boss): a query to a
    // hung or partitioned server gives up and its client is discarded, so the workers stop
    // claiming jobs while the database does not answer and claim again once it does, instead of
    // waiting on a dead socket for the kernel's TCP timeout (db/deadline.ts has ours).
    // Behind a pooler with DATABASE_DIRECT_URL, the pool stays on the pooled address and only its
    // LISTEN goes to the server (pg-boss-session-listen.ts says why that is all it needs).
    ...(external && db.url ? bossConnection(db.url, db.directUrl) : { db: bossDb(db.sql) }),
    schema: QUEUE_SCHEMA,
    supervise: worker,
    schedule: worker,
    useListenNotify: external && worker,
    superviseIntervalSeconds: checkSeconds,
    monitorIntervalSeconds: checkSeconds,
  });
  boss.on('error', (error) => logger.error({ err: error }, 'job queue error'));
  let ready = false;
  const started = (async () => {
    await boss.start();
    await ensureQueues(boss, { leaseSeconds, retryDelaySeconds: options.retryDelaySeconds ?? 5 });
    ready = true;
  })();
  // Handled here so that a failed start is not an unhandled rejection before its awaiter comes;
  // whoever awaits `started` still gets the error.
  started.catch(() => undefined);

  const workerIds: string[] = [];
  return {
    started,
    async enqueue(tx, jobId, flow, options = {}) {
      // Not awaited here: inside the caller's transaction that could wait forever (see Starting).
      if (!ready) throw new Error('a job was enqueued before the queue started: await queue.started before the transaction');
      const start = virtualStart(await virtualTime(tx), flow?.lastStart ?? null);
      // The group (pg-boss's group_id) is only a label here, no concurrency limit is set: it puts
      // the payer on pg-boss's row, and running rows under its index job_i7 (virtualTime).
      const job: QueuedJob = { jobId, ...(options.continued ? { continued: true } : {}), ...(options.trace ? { trace: options.trace } : {}) };
      await boss.send(JOBS_QUEUE, job, {
        db: bossDb(tx),
        priority: -start,
        ...(options.startAfterSeconds ? { startAfter: options.startAfterSeconds } : {}),
        ...(flow ? { group: { id: flow.payer } } : {}),
      });
      return start;
    },
    wake() {
      for (const id of workerIds) boss.notifyWorker(id);
    },
    async work(run, concurrency, batchSize = 1) {
      await started;
      // One pg-boss worker each, so `wake` can reach every one of them.
      for (let i = 0; i < concurrency; i++) {
        let id = '';
        const options = { pollingIntervalSeconds, notifyPollingIntervalSeconds: pollingIntervalSeconds * 5, includeMetadata: true, batchSize } as const;
        id = await boss.work(JOBS_QUEUE, options, async (jobs) => {
          try {
            await Promise.all(
              jobs.map(async (job) => {
                try {
                  const defer = async (seconds: number) => {
                    await boss.send(JOBS_QUEUE, job.data as QueuedJob, { priority: job.priority, startAfter: seconds, ...(job.groupId ? { group: { id: job.groupId } } : {}) });
                  };
                  const data = job.data as QueuedJob;
                  await run({
                    jobId: data.jobId,
                    continued: data.continued === true,
                    trace: carrierOf(data.trace),
                    waitSeconds: secondsBetween(job.startAfter, job.startedOn),
                    finalAttempt: job.retryCount >= job.retryLimit,
                    signal: job.signal,
                    defer,
                  });
                } catch (error) {
                  // Stored on pg-boss's row as a thrown error's would be. If the fail itself cannot be
                  // recorded, the throw fails the whole batch: its finished jobs are delivered again
                  // and end at once (the worker skips a job that is no longer queued), and this one
                  // is retried as it should be.
                  await boss.fail(JOBS_QUEUE, job.id, { message: error instanceof Error ? error.message : String(error) });
                }
              }),
            );
          } finally {
            // Straight on to the next fetch (pg-boss skips its poll delay once notified during a
            // job): a worker that found one may find another, and waiting for the poll after each
            // would drain a backlog one job per interval.
            boss.notifyWorker(id);
          }
        });
        workerIds.push(id);
      }
    },
    async every(cron, run) {
      await started;
      await boss.schedule(HOUSEKEEPING_QUEUE, cron, {}, { singletonKey: HOUSEKEEPING_QUEUE });
      await boss.work(HOUSEKEEPING_QUEUE, { pollingIntervalSeconds: 30 }, async () => run());
    },
    async queueBackgroundMigration(name) {
      await started;
      await boss.send(BACKGROUND_MIGRATIONS_QUEUE, { name } satisfies BackgroundSlice, { singletonKey: name });
    },
    async workBackgroundMigrations(run) {
      await started;
      await boss.work(BACKGROUND_MIGRATIONS_QUEUE, { pollingIntervalSeconds }, async ([job]) => run((job!.data as BackgroundSlice).name));
    },
    async stop(timeoutMs = 10_000) {
      // A start in progress finishes first (pg-boss's stop waits for it too); a failed one leaves
      // pg-boss's timers to its own stop.
      await started.catch(() => undefined);
      // The workers first, each waiting for its running jobs (within timeoutMs): pg-boss's own
      // graceful stop polls for them every 500 ms, which made every stop take half a second.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      });
      await Promise.race([Promise.all(QUEUES.map((name) => boss.offWork(name, { wait: true }))), late]);
      clearTimeout(timer);
      await boss.stop({ graceful: true, timeout: timeoutMs, close: false });
    },
  };
}

export type { BossJob };

/** Seconds from `from` to `to` (Dates, or timestamps as text), never negative; 0 when either cannot be read. */
function secondsBetween(from: Date | string, to: Date | string): number {
  const seconds = (new Date(to).getTime() - new Date(from).getTime()) / 1000;
  return Number.isFinite(seconds) ? Math.max(0, seconds) : 0;
}

/** pg-boss's own pool on a server: BOSS_POOL_MAX connections on `url`, its LISTEN (workers only) on `directUrl` when given. */
function bossConnection(url: string, directUrl: string | undefined) {
  const pool = { connectionString: url, max: BOSS_POOL_MAX, query_timeout: 30_000 };
  return directUrl ? { db: new SessionListenDb(pool, directUrl) } : pool;
}

/** pg-boss's pool per process on a server (docs/deploying.md counts every connection). */
export const BOSS_POOL_MAX = 4;

/** The place of a job whose organization's last queued job is at `lastStart`, when the queue is at `now` (Fairness). */
export function virtualStart(now: number, lastStart: number | null): number {
  return Math.min(MAX_VIRTUAL_START, Math.max(now, lastStart === null ? 0 : lastStart + 1));
}

/**
 * The queue's virtual time V (Fairness), from pg-boss's rows: each part is an ordered scan of a
 * partial index that holds only waiting or running rows (job_i11 for created and retry, the first
 * row of which is the answer; job_i7 for active rows with a group), however long the completed history.
 */
export async function virtualTime(tx: Db): Promise<number> {
  const [row] = await tx<{ v: number }[]>`
    select coalesce(
      (select -priority from ${tx(QUEUE_SCHEMA)}.job
        where name = ${JOBS_QUEUE} and state < 'active' and not blocked and state = 'created'
        order by priority desc, created_on limit 1),
      greatest(
        (select -min(priority) from ${tx(QUEUE_SCHEMA)}.job where name = ${JOBS_QUEUE} and state < 'active' and not blocked and state = 'retry'),
        (select -min(priority) from ${tx(QUEUE_SCHEMA)}.job where name = ${JOBS_QUEUE} and state = 'active' and group_id is not null)),
      0) as v`;
  return row!.v;
}

/** The settings of every queue; a start updates them only when they differ from what is stored. */
function queueOptions(o: { leaseSeconds: number; retryDelaySeconds: number }) {
  return {
    retryLimit: RETRY_LIMIT,
    retryDelay: o.retryDelaySeconds,
    retryBackoff: true,
    retryDelayMax: 300,
    heartbeatSeconds: o.leaseSeconds,
    // The longest a single run may take, heartbeats or not.
    expireInSeconds: 60 * 60,
    notify: true,
  };
}

async function ensureQueues(boss: PgBoss, o: { leaseSeconds: number; retryDelaySeconds: number }): Promise<void> {
  const wanted = queueOptions(o);
  for (const name of QUEUES) {
    const stored = await boss.getQueue(name);
    // The policy is fixed when a queue is made (pg-boss cannot change it later).
    if (!stored) await boss.createQueue(name, name === BACKGROUND_MIGRATIONS_QUEUE ? { ...wanted, policy: 'stately' } : wanted);
    else if (Object.entries(wanted).some(([key, value]) => (stored as unknown as Record<string, unknown>)[key] !== value)) await boss.updateQueue(name, wanted);
    // pg-boss reads a queue's settings into a cache on first use, through its own connection: were
    // that first use `enqueue` inside a transaction, it would need a second connection while the
    // transaction holds one (the only one, on the embedded database). Settling a job that does not
    // exist fills the cache now and changes nothing.
    await boss.complete(name, randomUUID());
  }
}

/**
 * pg-boss's schema and the queues, made through `sql` (a migration step of the embedded
 * template, composition/database-template.ts, and of the test template on a server): a database made from the
 * template starts its queue without creating them.
 */
export async function installQueueSchema(sql: Db): Promise<void> {
  const boss = new PgBoss({ db: bossDb(sql), schema: QUEUE_SCHEMA, supervise: false, schedule: false });
  await boss.start();
  try {
    await ensureQueues(boss, { leaseSeconds: 60, retryDelaySeconds: 5 });
  } finally {
    await boss.stop({ graceful: false, close: false });
  }
}

/**
 * What the soak (bench/soak.ts) samples besides its own requests: the job counts, and from /proc
 * the resident memory and CPU time of `serve`, its children (the job worker and the AI service,
 * found by parent pid), PostgreSQL (postmaster and backends) and the whole machine, whose busy
 * time minus ours is what other work took.
 *
 * The job counts come from the `jobs` table over a connection of the soak's own on a database
 * server (`tableJobs`). On the embedded database (`metricsJobs`) the soak cannot connect: PGlite
 * serves one connection, held by `serve`. It reads the service's `GET /metrics` instead, whose
 * queue gauges are the same count of the `jobs` table (queue-stats.ts, at every scrape), and whose
 * `jobs.create` call counter is the number of jobs created. There `serve`'s CPU is split further
 * by thread (/proc/<pid>/task): its main thread (the API and the inline job worker) and the
 * `embedded-database` thread (PGlite).
 */
import { readdir, readFile } from 'node:fs/promises';
import type { Sql } from 'postgres';
import { createClient } from '../clients/typescript/src/index.ts';
import { memoryOf } from './document-app.ts';
import type { SoakUser } from './soak-mix.ts';

const CLOCK_TICKS = 100; // USER_HZ, 100 on Linux x86-64 (getconf CLK_TCK)

export type Processes = { serve: number; worker: number; ai: number };

export interface JobCounts {
  /** Jobs queued or running; jobs created and finished so far; failed so far. */
  backlog: number;
  created: number;
  finished: number;
  failed: number;
}

export type FailedJobs = { kind: string; message: string; n: number }[];

/** Where the soak reads the jobs. */
export interface JobSource {
  counts(): Promise<JobCounts>;
  /** Jobs queued or running. */
  backlog(): Promise<number>;
  /** Failed jobs by kind and message, most frequent first (at most 10). */
  failedByKind(users: readonly SoakUser[]): Promise<FailedJobs>;
}

export interface Sample extends JobCounts {
  /** performance.now() */
  at: number;
  /** VmRSS in MiB. */
  rss: Processes;
  /**
   * CPU seconds so far; `machine`: every process on the machine. `mainThread` and `databaseThread`:
   * two of serve's threads (embedded database only, NaN otherwise), already counted in `serve`.
   */
  cpu: Processes & { postgres: number; client: number; machine: number; mainThread: number; databaseThread: number };
  pids: Partial<Processes>;
}

/**
 * A function that takes one Sample: the jobs, `servePid`'s processes, `postgresPid`'s (none on the
 * embedded database) and, with `threads`, serve's main and database threads.
 */
export function sampler(jobs: JobSource, servePid: number, postgresPid: number | undefined, threads = false): () => Promise<Sample> {
  return async () => {
    const counts = await jobs.counts();
    const { worker, ai } = await childrenOf(servePid);
    const client = process.cpuUsage();
    const byThread = threads ? await threadCpuSeconds(servePid) : new Map<string, number>();
    return {
      at: performance.now(),
      ...counts,
      rss: { serve: await rssOf(servePid), worker: await rssOf(worker), ai: await rssOf(ai) },
      cpu: {
        serve: await cpuSeconds(servePid),
        worker: worker ? await cpuSeconds(worker) : NaN,
        ai: ai ? await cpuSeconds(ai) : NaN,
        postgres: postgresPid ? await cpuSeconds(postgresPid, true) : NaN,
        client: (client.user + client.system) / 1e6,
        machine: await machineCpuSeconds(),
        mainThread: byThread.get('MainThread') ?? NaN,
        databaseThread: byThread.get(DATABASE_THREAD) ?? NaN,
      },
      pids: { serve: servePid, ...(worker ? { worker } : {}), ...(ai ? { ai } : {}) },
    };
  };
}

/** The jobs table over the soak's own connection (a database server). */
export function tableJobs(sql: Sql): JobSource {
  return {
    async counts() {
      const [jobs] = await sql<JobCounts[]>`
        select count(*) filter (where status in ('queued', 'running'))::int as backlog,
               count(*)::int as created,
               count(*) filter (where status in ('succeeded', 'failed', 'canceled'))::int as finished,
               count(*) filter (where status = 'failed')::int as failed
        from jobs`;
      return jobs!;
    },
    async backlog() {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from jobs where status in ('queued', 'running')`;
      return row!.n;
    },
    failedByKind: () => sql<FailedJobs>`
      select kind, coalesce(error_message, '') as message, count(*)::int as n from jobs where status = 'failed'
      group by 1, 2 order by 3 desc limit 10`,
  };
}

/**
 * The service's GET /metrics (the embedded database), with the METRICS_TOKEN the soak gave serve:
 * backlog = workspace_api_queue_depth + _running and failed = _queue_failed, counted in the jobs
 * table at the scrape; created = the jobs.create calls answered 2xx
 * (workspace_api_requests_total), the only way jobs are made here (no job is deleted either:
 * documents.delete leaves its jobs); finished = created - backlog. A job whose jobs.create answer
 * is still being sent is in the backlog but not yet counted as created, so `finished` can lag by
 * the few requests in flight; once the load stops the figures are exact. The failed jobs' kinds
 * and messages come from jobs.list (status failed) in each soak user's organization.
 */
export function metricsJobs(baseUrl: string, token: string): JobSource {
  const scrape = async () => {
    const response = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`GET /metrics answered ${response.status}: ${text.slice(0, 200)}`);
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    let created = 0;
    for (const [, status, value] of text.matchAll(/^workspace_api_requests_total\{[^}]*procedure="jobs\.create"[^}]*status="(\d+)"[^}]*\} (\S+)$/gm)) {
      if (status!.startsWith('2')) created += Number(value);
    }
    return { depth: gauge('workspace_api_queue_depth'), running: gauge('workspace_api_queue_running'), failed: gauge('workspace_api_queue_failed'), created };
  };
  return {
    async counts() {
      const { depth, running, failed, created } = await scrape();
      const backlog = depth + running;
      return { backlog, created, finished: created - backlog, failed };
    },
    async backlog() {
      const { depth, running } = await scrape();
      return depth + running;
    },
    async failedByKind(users) {
      const found = new Map<string, { kind: string; message: string; n: number }>();
      for (const user of users) {
        // Not through the Recorder: the report's counts are the load's.
        const client = createClient({ baseUrl, token: user.token });
        const { items } = await client.jobs.list({ organizationId: user.organizationId, status: 'failed', limit: 100 });
        for (const job of items) {
          const message = job.error?.message ?? '';
          const entry = found.get(`${job.kind}\0${message}`) ?? { kind: job.kind, message, n: 0 };
          entry.n++;
          found.set(`${job.kind}\0${message}`, entry);
        }
      }
      return [...found.values()].sort((a, b) => b.n - a.n).slice(0, 10);
    },
  };
}

/** The serve process's children by the `main.ts` command they run (`worker`, `ai`). */
export async function childrenOf(pid: number): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  for (const child of await processesWithParent(pid)) {
    const command = (await readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '')).split('\0').filter(Boolean).at(-1);
    if (command) found[command] = child;
  }
  return found;
}

async function processesWithParent(parent: number): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readStat(Number(name));
    if (stat?.ppid === parent) pids.push(Number(name));
  }
  return pids;
}

async function readStat(pid: number, path = `/proc/${pid}/stat`): Promise<{ ppid: number; cpuSeconds: number; endedChildrenCpuSeconds: number } | undefined> {
  const text = await readFile(path, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  // The command name is in parentheses and may hold spaces: fields are counted after the last ')'
  // (state, ppid, ..., utime, stime, cutime, cstime: fields 3, 4, 14-17 of proc(5)).
  const fields = text
    .slice(text.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return { ppid: fields[1]!, cpuSeconds: (fields[11]! + fields[12]!) / CLOCK_TICKS, endedChildrenCpuSeconds: (fields[13]! + fields[14]!) / CLOCK_TICKS };
}

/**
 * CPU seconds (user + system) of a process; with `withChildren`, of its children too, those still
 * running and those that ended (PostgreSQL's backends come and go).
 */
export async function cpuSeconds(pid: number, withChildren = false): Promise<number> {
  const own = await readStat(pid);
  if (!own) return NaN;
  let total = own.cpuSeconds;
  if (withChildren) {
    total += own.endedChildrenCpuSeconds;
    for (const child of await processesWithParent(pid)) total += (await readStat(child))?.cpuSeconds ?? 0;
  }
  return total;
}

/** The name serve's PGlite thread has in /proc (src/db/embedded.ts names it; Linux keeps 15 characters). */
const DATABASE_THREAD = 'embedded-database'.slice(0, 15);

/** CPU seconds of each named thread of a process (threads of the same name summed). */
async function threadCpuSeconds(pid: number): Promise<Map<string, number>> {
  const seconds = new Map<string, number>();
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const name = (await readFile(`/proc/${pid}/task/${tid}/comm`, 'utf8').catch(() => '')).trim();
    const stat = await readStat(Number(tid), `/proc/${pid}/task/${tid}/stat`);
    if (name && stat) seconds.set(name, (seconds.get(name) ?? 0) + stat.cpuSeconds);
  }
  return seconds;
}

/** VmRSS in MiB, NaN once the process is gone. */
async function rssOf(pid: number | undefined): Promise<number> {
  if (pid === undefined) return NaN;
  return memoryOf(pid).then(
    (memory) => memory.rss,
    () => NaN,
  );
}

/** CPU seconds the whole machine has spent busy (all cores, /proc/stat): with ours subtracted, what other work took. */
async function machineCpuSeconds(): Promise<number> {
  const [, ...fields] = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!.trim().split(/\s+/);
  const ticks = fields.map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already counted in user)
  const busy = ticks.slice(0, 8).reduce((sum, value) => sum + value, 0) - ticks[3]! - ticks[4]!;
  return busy / CLOCK_TICKS;
}

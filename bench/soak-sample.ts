/**
 * What the soak (bench/soak.ts) samples besides its own requests: the job counts of the `jobs`
 * table, and from /proc the resident memory and CPU time of `serve`, its children (the job worker
 * and the AI service, found by parent pid), PostgreSQL (postmaster and backends) and the whole
 * machine, whose busy time minus ours is what other work took.
 */
import { readdir, readFile } from 'node:fs/promises';
import type { Sql } from 'postgres';
import { memoryOf } from './document-app.ts';

const CLOCK_TICKS = 100; // USER_HZ, 100 on Linux x86-64 (getconf CLK_TCK)

export type Processes = { serve: number; worker: number; ai: number };

export interface Sample {
  /** performance.now() */
  at: number;
  /** Jobs queued or running; jobs created and finished so far; failed so far. */
  backlog: number;
  created: number;
  finished: number;
  failed: number;
  /** VmRSS in MiB. */
  rss: Processes;
  /** CPU seconds so far; `machine`: every process on the machine. */
  cpu: Processes & { postgres: number; client: number; machine: number };
  pids: Partial<Processes>;
}

/** A function that takes one Sample of `servePid`'s processes, `postgresPid`'s and the jobs table. */
export function sampler(sql: Sql, servePid: number, postgresPid: number): () => Promise<Sample> {
  return async () => {
    const [jobs] = await sql<{ backlog: number; created: number; finished: number; failed: number }[]>`
      select count(*) filter (where status in ('queued', 'running'))::int as backlog,
             count(*)::int as created,
             count(*) filter (where status in ('succeeded', 'failed', 'canceled'))::int as finished,
             count(*) filter (where status = 'failed')::int as failed
      from jobs`;
    const { worker, ai } = await childrenOf(servePid);
    const client = process.cpuUsage();
    return {
      at: performance.now(), ...jobs!,
      rss: { serve: await rssOf(servePid), worker: await rssOf(worker), ai: await rssOf(ai) },
      cpu: {
        serve: await cpuSeconds(servePid), worker: worker ? await cpuSeconds(worker) : NaN, ai: ai ? await cpuSeconds(ai) : NaN,
        postgres: await cpuSeconds(postgresPid, true), client: (client.user + client.system) / 1e6, machine: await machineCpuSeconds(),
      },
      pids: { serve: servePid, ...(worker ? { worker } : {}), ...(ai ? { ai } : {}) },
    };
  };
}

/** Jobs queued or running. */
export async function backlogOf(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from jobs where status in ('queued', 'running')`;
  return row!.n;
}

/** Failed jobs by kind and message, most frequent first. */
export async function failedJobs(sql: Sql): Promise<{ kind: string; message: string; n: number }[]> {
  return sql<{ kind: string; message: string; n: number }[]>`
    select kind, coalesce(error_message, '') as message, count(*)::int as n from jobs where status = 'failed'
    group by 1, 2 order by 3 desc limit 10`;
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

async function readStat(pid: number): Promise<{ ppid: number; cpuSeconds: number; endedChildrenCpuSeconds: number } | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  // The command name is in parentheses and may hold spaces: fields are counted after the last ')'
  // (state, ppid, ..., utime, stime, cutime, cstime: fields 3, 4, 14-17 of proc(5)).
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ').map(Number);
  return { ppid: fields[1]!, cpuSeconds: (fields[11]! + fields[12]!) / CLOCK_TICKS, endedChildrenCpuSeconds: (fields[13]! + fields[14]!) / CLOCK_TICKS };
}

/**
 * CPU seconds (user + system) of a process; with `withChildren`, of its children too, those still
 * running and those that ended (PostgreSQL's backends come and go).
 */
async function cpuSeconds(pid: number, withChildren = false): Promise<number> {
  const own = await readStat(pid);
  if (!own) return NaN;
  let total = own.cpuSeconds;
  if (withChildren) {
    total += own.endedChildrenCpuSeconds;
    for (const child of await processesWithParent(pid)) total += (await readStat(child))?.cpuSeconds ?? 0;
  }
  return total;
}

/** VmRSS in MiB, NaN once the process is gone. */
async function rssOf(pid: number | undefined): Promise<number> {
  if (pid === undefined) return NaN;
  return memoryOf(pid).then((memory) => memory.rss, () => NaN);
}

/** CPU seconds the whole machine has spent busy (all cores, /proc/stat): with ours subtracted, what other work took. */
async function machineCpuSeconds(): Promise<number> {
  const [, ...fields] = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!.trim().split(/\s+/);
  const ticks = fields.map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already counted in user)
  const busy = ticks.slice(0, 8).reduce((sum, value) => sum + value, 0) - ticks[3]! - ticks[4]!;
  return busy / CLOCK_TICKS;
}

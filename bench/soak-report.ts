/**
 * What the soak (bench/soak.ts) prints and judges: one table row per window (minute or third), the
 * criteria with their limits, the summary block for docs/benchmarks.md, and what no criterion
 * judges but is worth a look (answers by operation, the service's error lines and warnings).
 * The columns of processes follow the database (`SoakDatabase`): on a server, serve, the worker
 * process, the AI service and PostgreSQL; embedded, serve (with its main and database threads:
 * the job worker runs on the main thread, PostgreSQL in the other) and the AI service.
 */
import type { MixCounts } from './soak-mix.ts';
import type { Sample } from './soak-sample.ts';
import type { Recorder, WindowFigures } from './soak-record.ts';
import type { Serve } from './soak-service.ts';

/**
 * decayWindowSeconds: the shortest window whose throughput is judged. On two cores shared by the
 * API, PostgreSQL, the AI service and the client, the throughput drifts by tens of percent over
 * 10-40 s with nothing wrong: serve keeps its share of a core but gets less done with it while the
 * AI service is busy on the other. Measured on a 4- and a 5-minute run, the difference between two
 * windows 20 s long and 20 s apart had a standard deviation of 8-9%, so a 60-s soak judged by
 * thirds failed 6-10% of quiet runs (CI failed so once, at -13%); minutes 60 s apart: 4%, no pair
 * beyond -8% (docs/benchmarks.md, "Why minutes").
 * decay: since the AI service takes about 70% of a core (it took 43% when the 10% limit was set),
 * minutes wander too: a 15-minute quiet run on 2026-11-28 went 569, 505, 520, 482 ... 616, 602, 631
 * req/s with no trend (serve's CPU per request 0.94-1.19 ms in step with it), and CI failed once at
 * -11% (611 → 543). A fall of a fifth in two minutes is beyond that wander; a slower decay needs
 * a longer run (SOAK_S=900) to be told from it.
 */
export const LIMITS = { decay: 0.2, decayWindowSeconds: 60, memory: 0.3, drainSeconds: 60 };

/** SOAK_DATABASE: PostgreSQL 15 server (`server`, the default) or the embedded PGlite (`embedded`, as `make start`). */
export type SoakDatabase = 'server' | 'embedded';

/** The processes whose RSS is printed, and those of them judged (the AI service's is reported only). */
export const RSS_PROCESSES = { server: ['serve', 'worker', 'ai'], embedded: ['serve', 'ai'] } as const;
export const JUDGED_PROCESSES = { server: ['serve', 'worker'], embedded: ['serve'] } as const;
const LABEL = { serve: 'serve', worker: 'worker', ai: 'AI' } as const;
export const rssNames = (database: SoakDatabase) => RSS_PROCESSES[database].map((name) => LABEL[name]).join(' / ');
export const rssValues = (database: SoakDatabase, sample: Sample) => RSS_PROCESSES[database].map((name) => mib(sample.rss[name])).join(' / ');

export const mib = (value: number) => (Number.isFinite(value) ? value.toFixed(0) : '-');
const ms = (value: number) => (Number.isFinite(value) ? (value < 10 ? value.toFixed(1) : value.toFixed(0)) : '-');
const signed = (value: number) => `${value >= 0 ? '+' : ''}${(value * 100).toFixed(0)}%`;

export const TABLE_HEADER = (window: string, database: SoakDatabase) => {
  const cpu = database === 'server' ? 'serve / worker / AI / PostgreSQL / client / others' : 'serve (main thread / database thread) / AI / client / others';
  const header =
    `| ${window} | req/s | p50 ms | p99 ms | 5xx | net err | streams opened | jobs created/s | finished/s | backlog end (max) | ` + `RSS MiB ${rssNames(database)} | CPU % ${cpu} | serve CPU ms/req |`;
  return `${header}\n|${header
    .split('|')
    .slice(1, -1)
    .map(() => '---')
    .join('|')}|`;
};

/** Processes whose CPU is ours (a process that does not run in this mode counts 0). */
const OURS = ['serve', 'worker', 'ai', 'postgres', 'client'] as const;

/** CPU % (of one core) that processes other than the soak's took between two samples: a shared machine shows here. */
export function othersShare(from: Sample, to: Sample): number {
  const others = to.cpu.machine - from.cpu.machine - OURS.reduce((sum, name) => sum + (to.cpu[name] - from.cpu[name] || 0), 0);
  return Math.max(0, (others / ((to.at - from.at) / 1000)) * 100);
}

function cpuCells(database: SoakDatabase, from: Sample, to: Sample): string {
  const seconds = (to.at - from.at) / 1000;
  const share = (name: keyof Sample['cpu']) => {
    const value = ((to.cpu[name] - from.cpu[name]) / seconds) * 100;
    return Number.isFinite(value) ? value.toFixed(0) : '-';
  };
  const others = othersShare(from, to).toFixed(0);
  if (database === 'server') return [...OURS.map(share), others].join(' / ');
  return [`${share('serve')} (${share('mainThread')} / ${share('databaseThread')})`, share('ai'), share('client'), others].join(' / ');
}

export function windowRow(database: SoakDatabase, label: string, figures: WindowFigures, from: Sample, to: Sample, streams: number, maxBacklog: number): string {
  const seconds = (to.at - from.at) / 1000;
  return (
    `| ${label} | ${figures.rps.toFixed(0)} | ${ms(figures.p50)} | ${ms(figures.p99)} | ${figures.serverErrors} | ${figures.networkErrors} | ${streams} | ` +
    `${((to.created - from.created) / seconds).toFixed(1)} | ${((to.finished - from.finished) / seconds).toFixed(1)} | ${to.backlog} (${Math.max(maxBacklog, to.backlog)}) | ` +
    `${rssValues(database, to)} | ${cpuCells(database, from, to)} | ${(((to.cpu.serve - from.cpu.serve) * 1000) / figures.requests).toFixed(2)} |`
  );
}

export function idleRow(database: SoakDatabase, seconds: number, from: Sample, to: Sample): string {
  const finished = (to.finished - from.finished) / ((to.at - from.at) / 1000);
  return `| idle ${seconds} s after | | | | | | | | ${finished.toFixed(1)} | ${to.backlog} | ${rssValues(database, to)} | ${cpuCells(database, from, to)} | |`;
}

export interface Criterion {
  name: string;
  result: string;
  limit: string;
  pass: boolean;
  /** False when the result is printed but cannot fail the run (a throughput of windows too short). */
  judged?: boolean;
}

export interface Outcome {
  database: SoakDatabase;
  window: string;
  windowSeconds: number;
  first: WindowFigures;
  last: WindowFigures;
  /** Other processes' CPU % in the first and last window. */
  others: [number, number];
  drainedAfter: number | undefined;
  backlogLeft: number;
  baseline: Sample;
  after: Sample;
}

export function judge(outcome: Outcome, recorder: Recorder, counts: MixCounts, serve: Serve): Criterion[] {
  const { first, last, baseline, after } = outcome;
  const decay = (first.rps - last.rps) / first.rps;
  const decayJudged = outcome.windowSeconds >= LIMITS.decayWindowSeconds;
  const restarted = (name: 'serve' | 'worker') => name !== 'serve' && baseline.pids[name] !== after.pids[name];
  const growth = (name: 'serve' | 'worker') => (after.rss[name] - baseline.rss[name]) / baseline.rss[name];
  return [
    {
      name: 'no request failed',
      pass: recorder.serverErrors === 0 && recorder.networkErrors === 0 && counts.streamFailures.length === 0 && !serve.exit,
      result:
        `${recorder.serverErrors} 5xx, ${recorder.networkErrors} network errors, ${counts.streamFailures.length} job streams refused or cut` +
        `${serve.exit ? `; serve exited (${serve.exit.code ?? serve.exit.signal})` : ''}`,
      limit: '0',
    },
    {
      name: `throughput, last ${outcome.window} vs first`,
      pass: decay <= LIMITS.decay || !decayJudged,
      judged: decayJudged,
      result:
        `${signed(-decay)} (${first.rps.toFixed(0)} → ${last.rps.toFixed(0)} req/s; other processes' CPU ${outcome.others[0].toFixed(0)}% → ${outcome.others[1].toFixed(0)}%)` +
        (decayJudged ? '' : `; windows under ${LIMITS.decayWindowSeconds} s vary more than the limit (SOAK_S=180 or more judges it)`),
      limit: `at most ${signed(-LIMITS.decay)}`,
    },
    {
      name: 'job backlog drained after the load',
      pass: outcome.drainedAfter !== undefined,
      result: outcome.drainedAfter !== undefined ? `in ${outcome.drainedAfter.toFixed(0)} s` : `${outcome.backlogLeft} jobs left after ${LIMITS.drainSeconds} s`,
      limit: `${LIMITS.drainSeconds} s`,
    },
    ...JUDGED_PROCESSES[outcome.database].map((name) => ({
      name: `${name} RSS after the idle minute vs baseline`,
      pass: growth(name) <= LIMITS.memory && !restarted(name),
      result: `${signed(growth(name))} (${mib(baseline.rss[name])} → ${mib(after.rss[name])} MiB)${restarted(name) ? '; restarted during the run' : ''}`,
      limit: `at most ${signed(LIMITS.memory)}`,
    })),
    {
      name: 'the soak itself',
      pass: counts.clientExceptions.length === 0,
      result: counts.clientExceptions.length ? `${counts.clientExceptions.length} client exceptions` : 'no client exception',
      limit: '0',
    },
  ];
}

/** The block to paste into docs/benchmarks.md. */
export function printSummary(database: SoakDatabase, opening: string, window: string, rows: string[], criteria: Criterion[]): void {
  console.log('\n===== summary (paste into docs/benchmarks.md) =====');
  console.log(opening);
  console.log();
  console.log(TABLE_HEADER(window, database));
  for (const row of rows) console.log(row);
  console.log();
  console.log('| criterion | result | limit | |');
  console.log('|---|---|---|---|');
  for (const criterion of criteria) console.log(`| ${criterion.name} | ${criterion.result} | ${criterion.limit} | ${criterion.judged === false ? 'not judged' : criterion.pass ? 'pass' : '**FAIL**'} |`);
  console.log('===== end of summary =====\n');
}

/** Everything worth a look that no criterion judges: answers by operation, the service's log, the streams. */
export function printFindings(recorder: Recorder, counts: MixCounts, serve: Serve, exitCode: number | null, baseline: Sample, after: Sample, failed: { kind: string; message: string; n: number }[]): void {
  console.log('requests by operation and outcome, whole run (set-up and warm-up included):');
  for (const [op, outcomes] of [...recorder.outcomes].sort(([a], [b]) => a.localeCompare(b))) {
    console.log(`  ${op.padEnd(34)} ${[...outcomes].map(([outcome, n]) => `${outcome}: ${n}`).join(', ')}`);
  }
  console.log(`AI service RSS: ${mib(baseline.rss.ai)} → ${mib(after.rss.ai)} MiB (reported, not judged)`);
  if (baseline.pids.ai !== after.pids.ai) console.log(`the AI service was restarted (pid ${baseline.pids.ai} → ${after.pids.ai})`);
  console.log(`serve stopped (SIGTERM) with exit code ${exitCode}`);
  if (recorder.failures.length) {
    console.log('failed requests (the first 20):');
    for (const failure of recorder.failures) console.log(`  ${failure.op} ${failure.status}: ${failure.detail}`);
  }
  if (failed.length) {
    console.log('failed jobs by kind and message:');
    for (const { kind, message, n } of failed) console.log(`  ${n}  ${kind}: ${message}`);
  }
  if (counts.streamFailures.length) {
    console.log(`job streams refused or cut: ${counts.streamFailures.length}; the first: ${counts.streamFailures.slice(0, 5).join(' | ')}`);
  }
  const names = new Map(Object.entries({ ...baseline.pids, ...after.pids }).map(([name, pid]) => [pid, name]));
  if (serve.log.errorCount) {
    console.log(`error-level log lines: ${serve.log.errorCount}; the first ${Math.min(10, serve.log.errors.length)}:`);
    for (const entry of serve.log.errors.slice(0, 10)) console.log(`  [${names.get(entry.pid as number) ?? String(entry.pid)}] ${JSON.stringify(entry).slice(0, 1_000)}`);
  } else console.log('error-level log lines: none');
  if (serve.log.warnings.size) {
    console.log('warnings by kind:');
    for (const [kind, n] of [...serve.log.warnings].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${n}  ${kind}`);
  }
  if (counts.clientExceptions.length) {
    console.log('client exceptions (a bug in the soak):');
    for (const exception of counts.clientExceptions.slice(0, 5)) console.log(`  ${exception}`);
  }
}

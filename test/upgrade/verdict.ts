/**
 * The judgement of an upgrade run, phase by phase (issue 37, item 4): every request's answer
 * (balancer.ts) falls in the phase it was sent in, except that a request still waiting when
 * `migrate` started, or sent while it ran, is judged with `migrate`. Expected in every phase: no
 * 5xx, no transport error and no other error answer (the load makes only valid requests); while
 * `migrate` runs, no request held longer than MIGRATE_LIMIT_MS (heldByMigrate); and every job
 * created in any phase succeeded, whichever release ran it. Anything else is a failure, printed
 * with its reason.
 */
import { percentile } from '../../bench/statistics.ts';
import type { Exchange } from './balancer.ts';

export const PHASES = ['old', 'migrate', 'mixed', 'new'] as const;
export type Phase = (typeof PHASES)[number];
export const MIGRATE_LIMIT_MS = 2_000;
/**
 * How long after `migrate` ends a request's time still counts against it: a request that waited
 * for one of its locks is answered within this once the lock is released. Time later than that is
 * not the migration's: right after `migrate` the new release starts (the AI service loads its model,
 * two more Node processes compile), and on a 2-core CI machine a search that was sent in the
 * 0.4 s of a harmless `migrate` once took 7.3 s, all of it after `migrate` had ended.
 */
export const MIGRATE_GRACE_MS = 1_000;

/** When each phase began and ended, ms on the balancer's clock. */
export type Timeline = Record<Phase, { from: number; to: number }>;

export interface SettledJob {
  id: string;
  kind: string;
  at: number;
  status: string;
  error: string | null;
  /** Which process ran it to success (`old-worker-1`), when one said so in its log. */
  ranBy: string | null;
}

export interface PhaseFigures {
  phase: Phase;
  seconds: number;
  requests: number;
  p50: number;
  p95: number;
  max: number;
  serverErrors: number;
  transportErrors: number;
  otherErrors: number;
  /** Held longer than MIGRATE_LIMIT_MS by `migrate` (judged during `migrate` only). */
  slow: number;
  /** The three slowest requests, e.g. `documents.search 1840 ms (old-api-1)`. */
  slowest: string[];
  jobs: { created: number; succeeded: number; ranByOld: number; ranByNew: number; other: number };
}

export interface Verdict {
  passed: boolean;
  figures: PhaseFigures[];
  failures: string[];
  /** The report, lines ready to print. */
  report: string[];
}

export function phaseOf(exchange: Pick<Exchange, 'start' | 'end'>, timeline: Timeline): Phase {
  const migrate = timeline.migrate;
  if (exchange.start <= migrate.to && exchange.end >= migrate.from) return 'migrate';
  for (const phase of PHASES) if (exchange.start >= timeline[phase].from && exchange.start < timeline[phase].to) return phase;
  return exchange.start < timeline.old.from ? 'old' : 'new';
}

/** The part of a request's time spent while `migrate` ran, or within MIGRATE_GRACE_MS after it. */
export function heldByMigrate(exchange: Pick<Exchange, 'start' | 'end'>, timeline: Timeline): number {
  return Math.max(0, Math.min(exchange.end, timeline.migrate.to + MIGRATE_GRACE_MS) - Math.max(exchange.start, timeline.migrate.from));
}

export function judge(exchanges: readonly Exchange[], jobs: readonly SettledJob[], timeline: Timeline, extraFailures: readonly string[] = []): Verdict {
  const failures: string[] = [];
  // The same operation before anything changed, beside each slow request: slow already, or slowed by the migration?
  const before = new Map<string, number[]>();
  for (const exchange of exchanges) {
    if (phaseOf(exchange, timeline) === 'old') before.set(exchange.op, [...(before.get(exchange.op) ?? []), exchange.end - exchange.start]);
  }
  const baseline = (op: string) => {
    const latencies = before.get(op);
    return latencies ? `in phase old: p95 ${percentile(latencies, 95).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms of ${latencies.length}` : 'not sent in phase old';
  };
  const figures = PHASES.map((phase): PhaseFigures => {
    const mine = exchanges.filter((exchange) => phaseOf(exchange, timeline) === phase);
    const latencies = mine.map((exchange) => exchange.end - exchange.start);
    const phaseJobs = jobs.filter((job) => phaseOf({ start: job.at, end: job.at }, timeline) === phase);
    const label = (exchange: Exchange) => `${phase}: ${exchange.op} via ${exchange.target} at +${(exchange.start / 1000).toFixed(1)} s`;
    for (const exchange of mine) {
      const took = exchange.end - exchange.start;
      if (exchange.status === 'transport') failures.push(`${label(exchange)}: transport error ${exchange.code} after ${took.toFixed(0)} ms (${exchange.detail})`);
      else if (exchange.status >= 500) failures.push(`${label(exchange)}: ${exchange.status} ${exchange.code} after ${took.toFixed(0)} ms (${exchange.detail})`);
      else if (exchange.status >= 400) failures.push(`${label(exchange)}: unexpected ${exchange.status} ${exchange.code} (${exchange.detail})`);
      const held = phase === 'migrate' ? heldByMigrate(exchange, timeline) : 0;
      if (held > MIGRATE_LIMIT_MS) {
        failures.push(
          `${label(exchange)}: took ${(took / 1000).toFixed(2)} s (answered ${exchange.status}), ${(held / 1000).toFixed(2)} s of it while migrate ran; the limit is ${MIGRATE_LIMIT_MS / 1000} s (${exchange.op} ${baseline(exchange.op)})`,
        );
      }
    }
    for (const job of phaseJobs) {
      if (job.status !== 'succeeded') failures.push(`${phase}: job ${job.id} (${job.kind}) created at +${(job.at / 1000).toFixed(1)} s ended ${job.status}${job.error ? `: ${job.error}` : ''}`);
    }
    const status = (exchange: Exchange) => (exchange.status === 'transport' ? 0 : exchange.status);
    return {
      phase,
      seconds: (timeline[phase].to - timeline[phase].from) / 1000,
      requests: mine.length,
      p50: latencies.length ? percentile(latencies, 50) : NaN,
      p95: latencies.length ? percentile(latencies, 95) : NaN,
      max: latencies.length ? Math.max(...latencies) : NaN,
      serverErrors: mine.filter((exchange) => status(exchange) >= 500).length,
      transportErrors: mine.filter((exchange) => exchange.status === 'transport').length,
      otherErrors: mine.filter((exchange) => status(exchange) >= 400 && status(exchange) < 500).length,
      slow: phase === 'migrate' ? mine.filter((exchange) => heldByMigrate(exchange, timeline) > MIGRATE_LIMIT_MS).length : 0,
      slowest: [...mine]
        .sort((a, b) => b.end - b.start - (a.end - a.start))
        .slice(0, 3)
        .map((exchange) => `${exchange.op} ${(exchange.end - exchange.start).toFixed(0)} ms (${exchange.target})`),
      jobs: {
        created: phaseJobs.length,
        succeeded: phaseJobs.filter((job) => job.status === 'succeeded').length,
        ranByOld: phaseJobs.filter((job) => job.ranBy?.startsWith('old-')).length,
        ranByNew: phaseJobs.filter((job) => job.ranBy?.startsWith('new-')).length,
        other: phaseJobs.filter((job) => job.status !== 'succeeded').length,
      },
    };
  });
  failures.push(...extraFailures);
  const report = [
    'phase     seconds  requests  p50 ms  p95 ms  max ms  5xx  transport  4xx  >2 s  jobs (succeeded; run by old/new)',
    ...figures.map(
      (f) =>
        `${f.phase.padEnd(8)}  ${f.seconds.toFixed(1).padStart(7)}  ${String(f.requests).padStart(8)}  ${fixed(f.p50).padStart(6)}  ${fixed(f.p95).padStart(6)}  ${fixed(f.max).padStart(6)}  ` +
        `${String(f.serverErrors).padStart(3)}  ${String(f.transportErrors).padStart(9)}  ${String(f.otherErrors).padStart(3)}  ${String(f.slow).padStart(4)}  ` +
        `${f.jobs.created} (${f.jobs.succeeded}; ${f.jobs.ranByOld}/${f.jobs.ranByNew})`,
    ),
    ...figures.map((f) => `slowest in ${f.phase}: ${f.slowest.join(', ') || '-'}`),
    ...(failures.length ? [`${failures.length} failure(s):`, ...failures.map((failure) => `  FAIL ${failure}`)] : ['no failure']),
  ];
  return { passed: failures.length === 0, figures, failures, report };
}

function fixed(value: number): string {
  return Number.isNaN(value) ? '-' : value.toFixed(0);
}
